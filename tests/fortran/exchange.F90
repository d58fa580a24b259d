! What a Fortran application does with MPI, on 2 ranks: derived types (vector,
! subarray in Fortran order, struct at absolute addresses through MPI_BOTTOM),
! pack/unpack, blocking, nonblocking and persistent point to point, probes,
! collectives (MPI_IN_PLACE too). Every result is checked here; rank 0 prints
! checksums that must be the same with and without dtmpi preloaded.
! One source, three bindings: -DDTMPI_MPIF_H (include 'mpif.h'), -DDTMPI_F08
! (use mpi_f08), neither (use mpi). OPT_IERR: mpi_f08 calls may omit ierror.
#ifdef DTMPI_F08
#define DATATYPE type(MPI_Datatype)
#define REQUEST type(MPI_Request)
#define STATUS type(MPI_Status)
#define STATUSES(n) type(MPI_Status) :: sts(n)
#define SOURCE_OF(s) s%MPI_SOURCE
#define SOURCE_AT(k) sts(k)%MPI_SOURCE
#define TAG_AT(k) sts(k)%MPI_TAG
#define OPT_IERR
#else
#define DATATYPE integer
#define REQUEST integer
#define STATUS integer, dimension(MPI_STATUS_SIZE)
#define STATUSES(n) integer :: sts(MPI_STATUS_SIZE, n)
#define SOURCE_OF(s) s(MPI_SOURCE)
#define SOURCE_AT(k) sts(MPI_SOURCE, k)
#define TAG_AT(k) sts(MPI_TAG, k)
#define OPT_IERR , ierr
#endif
program exchange
#if defined(DTMPI_F08)
  use mpi_f08
#elif !defined(DTMPI_MPIF_H)
  use mpi
#endif
  implicit none
#ifdef DTMPI_MPIF_H
  include 'mpif.h'
#endif
  integer, parameter :: n = 8
  integer :: ierr, me, np, peer, i, j, cnt, pos, psize, idx
  DATATYPE :: vec, sub, st, dup
  DATATYPE :: types(2)
  REQUEST :: reqs(2)
  STATUS :: s
  STATUSES(2)
  integer :: sizes(2), subsizes(2), starts(2), blen(2)
  integer(kind=MPI_ADDRESS_KIND) :: disp(2)
  logical :: flag
  double precision :: a(n, n), b(n, n), rows(n, 2), sums(6), allsums(6, 2)
  integer :: ints(2), rints(2)
  double precision :: dbl(3), rdbl(3)
  character :: pbuf(4096)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (np /= 2) call fail('needs 2 ranks')
  peer = 1 - me
  do j = 1, n
    do i = 1, n
      a(i, j) = me * 1000 + i * 10 + j
    end do
  end do
  sums = 0

  ! vector: row 2 of a -> row 3 of the peer's b (blocking, status checked)
  call MPI_Type_vector(n, 1, n, MPI_DOUBLE_PRECISION, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  b = -1
  if (me == 0) then
    call MPI_Send(a(2, 1), 1, vec, peer, 11, MPI_COMM_WORLD, ierr)
    call MPI_Recv(b(3, 1), 1, vec, peer, 11, MPI_COMM_WORLD, s, ierr)
  else
    call MPI_Recv(b(3, 1), 1, vec, peer, 11, MPI_COMM_WORLD, s, ierr)
    call MPI_Send(a(2, 1), 1, vec, peer, 11, MPI_COMM_WORLD, ierr)
  end if
  if (ierr /= MPI_SUCCESS) call fail('vector ierror')
  call MPI_Get_count(s, vec, cnt, ierr)
  if (cnt /= 1 .or. SOURCE_OF(s) /= peer) call fail('vector status')
  do j = 1, n
    if (b(3, j) /= peer * 1000 + 20 + j) call fail('vector data')
  end do
  if (any(b(1:2, :) /= -1) .or. any(b(4:n, :) /= -1)) call fail('vector wrote outside')
  sums(1) = sum(b(3, :))

  ! subarray (Fortran order), nonblocking, statuses of Waitall
  sizes = (/ n, n /)
  subsizes = (/ 4, 3 /)
  starts = (/ 2, 1 /)
  call MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE_PRECISION, sub, ierr)
  call MPI_Type_commit(sub, ierr)
  b = -1
  call MPI_Irecv(b, 1, sub, peer, 12, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a, 1, sub, peer, 12, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, sts, ierr)
  if (SOURCE_AT(1) /= peer .or. TAG_AT(1) /= 12) call fail('subarray statuses')
  if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) call fail('requests not freed')
  do j = 1, n
    do i = 1, n
      if (i >= 3 .and. i <= 6 .and. j >= 2 .and. j <= 4) then
        if (b(i, j) /= peer * 1000 + i * 10 + j) call fail('subarray data')
      else if (b(i, j) /= -1) then
        call fail('subarray wrote outside')
      end if
    end do
  end do
  sums(2) = sum(b)

  ! struct at absolute addresses, sent and received from MPI_BOTTOM
  ints = (/ me + 7, me + 8 /)
  dbl = (/ me + 0.5d0, me + 1.5d0, me + 2.5d0 /)
  blen = (/ 2, 3 /)
  types(1) = MPI_INTEGER
  types(2) = MPI_DOUBLE_PRECISION
  call MPI_Get_address(ints, disp(1), ierr)
  call MPI_Get_address(dbl, disp(2), ierr)
  call MPI_Type_create_struct(2, blen, disp, types, st, ierr)
  call MPI_Type_commit(st, ierr)
  call MPI_Type_dup(st, dup, ierr)
  call MPI_Type_commit(dup, ierr)
  call MPI_Get_address(rints, disp(1), ierr)
  call MPI_Get_address(rdbl, disp(2), ierr)
  call MPI_Type_free(st, ierr)
  call MPI_Type_create_struct(2, blen, disp, types, st, ierr)
  call MPI_Type_commit(st, ierr)
  call MPI_Sendrecv(MPI_BOTTOM, 1, dup, peer, 13, MPI_BOTTOM, 1, st, peer, 13, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  if (rints(1) /= peer + 7 .or. rints(2) /= peer + 8 .or. rdbl(3) /= peer + 2.5d0) call fail('struct data')
  call MPI_Type_free(dup, ierr)
  if (dup /= MPI_DATATYPE_NULL) call fail('type_free did not null the handle')
  sums(3) = sum(rints) + sum(rdbl)

  ! pack / unpack: the subarray packed, sent as MPI_PACKED, unpacked by the peer
  call MPI_Pack_size(1, sub, MPI_COMM_WORLD, psize, ierr)
  if (psize < 12 * 8 .or. psize > size(pbuf)) call fail('pack_size')
  pos = 0
  call MPI_Pack(a, 1, sub, pbuf, size(pbuf), pos, MPI_COMM_WORLD, ierr)
  if (pos /= 12 * 8) call fail('pack position')
  call MPI_Sendrecv_replace(pbuf, pos, MPI_PACKED, peer, 14, peer, 14, MPI_COMM_WORLD, s, ierr)
  b = -1
  pos = 0
  call MPI_Unpack(pbuf, size(pbuf), pos, b, 1, sub, MPI_COMM_WORLD, ierr)
  if (pos /= 12 * 8 .or. b(3, 2) /= peer * 1000 + 32) call fail('unpack')
  sums(4) = sum(b)

  ! probe + persistent requests + test loop + waitany
  call MPI_Send_init(a(2, 1), 1, vec, peer, 15, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Recv_init(b(5, 1), 1, vec, peer, 15, MPI_COMM_WORLD, reqs(1), ierr)
  b = -1
  call MPI_Startall(2, reqs, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, reqs, flag, sts, ierr)
  end do
  if (reqs(1) == MPI_REQUEST_NULL) call fail('persistent request lost its handle')
  call MPI_Start(reqs(1), ierr)
  call MPI_Start(reqs(2), ierr)
  call MPI_Waitany(2, reqs, idx, s, ierr)
  if (idx < 1 .or. idx > 2) call fail('waitany index')
  call MPI_Wait(reqs(3 - idx), MPI_STATUS_IGNORE OPT_IERR)
  call MPI_Request_free(reqs(1), ierr)
  call MPI_Request_free(reqs(2), ierr)
  if (b(5, n) /= peer * 1000 + 20 + n) call fail('persistent data')
  call MPI_Isend(a(2, 1), 1, vec, peer, 16, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Probe(peer, 16, MPI_COMM_WORLD, s, ierr)
  call MPI_Get_count(s, MPI_DOUBLE_PRECISION, cnt, ierr)
  if (cnt /= n) call fail('probe count')
  call MPI_Irecv(b(6, 1), 1, vec, peer, 16, MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, s, ierr)
  end do
  call MPI_Wait(reqs(2), MPI_STATUS_IGNORE, ierr)
  sums(5) = sum(b(5, :)) + sum(b(6, :))
  ! statuses ignored (mpi_f08: its own sentinel), requests freed by MPI_Waitall
  call MPI_Irecv(b(7, 1), 1, vec, peer, 17, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a(2, 1), 1, vec, peer, 17, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE OPT_IERR)
  if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) call fail('waitall, statuses ignored')

  ! collectives: each rank's row 2 (vector type) gathered into columns of rows
  call MPI_Allgather(a(2, 1), 1, vec, rows, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (rows(1, 1) /= 21 .or. rows(n, 2) /= 1020 + n) call fail('allgather')
  sums(6) = sum(rows)
  call MPI_Allreduce(MPI_IN_PLACE, sums, 6, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Gather(sums, 6, MPI_DOUBLE_PRECISION, allsums, 6, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (me == 0) then
    if (any(allsums(:, 1) /= allsums(:, 2))) call fail('allreduce in place')
    write (*, '(a, 6f14.2)') 'checksums', allsums(:, 1)
  end if
  call MPI_Type_free(vec, ierr)
  call MPI_Type_free(sub, ierr)
  call MPI_Type_free(st, ierr)
  call MPI_Finalize(ierr)
  if (me == 0) write (*, '(a)') 'exchange ok'

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    integer :: e
    write (*, '(a, i0, 2a)') 'rank ', me, ' FAILED: ', what
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail

end program exchange
