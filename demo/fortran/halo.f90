! The halo demo in Fortran: a 3D block per rank with one ghost layer, ranks on
! a periodic Cartesian grid (MPI_Cart_create with reorder), each face a
! subarray type in Fortran order, exchanged with the 6 neighbours by
! MPI_Irecv/MPI_Isend/MPI_Waitall. Nothing in it knows dtmpi: run it plain,
! then with dtmpi (dtmpirun mpiexec -n 2 ./halo). Every ghost cell is checked.
!   halo [n [iterations]]      n^3 interior cells per rank (default 48, 50)
program halo
  use mpi
  implicit none
  integer :: n, iters, ierr, me, np, cart, it, d, side, nreq
  integer :: dims(3), coords(3), nb(2, 3), sizes(3), sub(3), start(3)
  integer :: send_t(2, 3), recv_t(2, 3), reqs(12)
  logical :: periods(3)
  double precision, allocatable :: u(:, :, :)
  double precision :: t0, t, checksum
  character(len=32) :: arg

  call MPI_Init(ierr)
  n = 48
  iters = 50
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) iters
  end if
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  dims = 0
  call MPI_Dims_create(np, 3, dims, ierr)
  periods = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, .true., cart, ierr)
  call MPI_Comm_rank(cart, me, ierr)
  call MPI_Cart_coords(cart, me, 3, coords, ierr)
  do d = 1, 3
    call MPI_Cart_shift(cart, d - 1, 1, nb(1, d), nb(2, d), ierr)
  end do

  ! faces: side 1 is the low end of dimension d, side 2 the high end
  sizes = n + 2
  do d = 1, 3
    do side = 1, 2
      sub = n
      sub(d) = 1
      start = 1
      start(d) = merge(1, n, side == 1)          ! interior layer sent (0-based)
      call face_type(start, send_t(side, d))
      start(d) = merge(0, n + 1, side == 1)      ! ghost layer received
      call face_type(start, recv_t(side, d))
    end do
  end do

  allocate (u(0:n + 1, 0:n + 1, 0:n + 1))
  call fill(u)
  call MPI_Barrier(cart, ierr)
  t0 = MPI_Wtime()
  do it = 1, iters
    nreq = 0
    do d = 1, 3
      do side = 1, 2
        nreq = nreq + 1
        call MPI_Irecv(u, 1, recv_t(side, d), nb(side, d), 10 * d + side, cart, reqs(nreq), ierr)
      end do
    end do
    do d = 1, 3
      do side = 1, 2  ! my low face is my low neighbour's high ghost layer: tag of side 3-side
        nreq = nreq + 1
        call MPI_Isend(u, 1, send_t(side, d), nb(side, d), 10 * d + 3 - side, cart, reqs(nreq), ierr)
      end do
    end do
    call MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE, ierr)
  end do
  t = (MPI_Wtime() - t0) / iters
  call check(u, checksum)
  call MPI_Allreduce(MPI_IN_PLACE, checksum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, cart, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, t, 1, MPI_DOUBLE_PRECISION, MPI_MAX, cart, ierr)
  if (me == 0) then
    write (*, '(a, i0, a, i0, a, 3(i0, a))') 'halo ', n, '^3 per rank, ', np, ' ranks (', dims(1), 'x', &
      dims(2), 'x', dims(3), '): ghost cells ok'
    write (*, '(a, f20.1)') 'checksum ', checksum
    write (*, '(a, f10.3, a)') 'time per exchange ', t * 1d3, ' ms'
  end if
  do d = 1, 3
    do side = 1, 2
      call MPI_Type_free(send_t(side, d), ierr)
      call MPI_Type_free(recv_t(side, d), ierr)
    end do
  end do
  call MPI_Finalize(ierr)

contains

  subroutine face_type(at, t)
    integer, intent(in) :: at(3)
    integer, intent(out) :: t
    call MPI_Type_create_subarray(3, sizes, sub, at, MPI_ORDER_FORTRAN, MPI_DOUBLE_PRECISION, t, ierr)
    call MPI_Type_commit(t, ierr)
  end subroutine face_type

  ! the value of global cell (i, j, k) of the rank at coordinates c
  double precision function value(c, i, j, k)
    integer, intent(in) :: c(3), i, j, k
    value = ((c(1) * n + i) * 1000.0d0 + (c(2) * n + j)) * 1000.0d0 + (c(3) * n + k)
  end function value

  subroutine fill(a)
    double precision, intent(out) :: a(0:, 0:, 0:)
    integer :: i, j, kk
    a = -1
    do kk = 1, n
      do j = 1, n
        do i = 1, n
          a(i, j, kk) = value(coords, i, j, kk)
        end do
      end do
    end do
  end subroutine fill

  ! each ghost face holds the neighbour's boundary layer (periodic grid)
  subroutine check(a, s)
    double precision, intent(in) :: a(0:, 0:, 0:)
    double precision, intent(out) :: s
    integer :: i, j, kk, c(3), idx(3), e
    s = 0
    do kk = 0, n + 1
      do j = 0, n + 1
        do i = 0, n + 1
          idx = (/ i, j, kk /)
          if (count(idx == 0 .or. idx == n + 1) /= 1) cycle  ! faces only, not edges
          c = coords
          where (idx == 0) c = modulo(coords - 1, dims)
          where (idx == n + 1) c = modulo(coords + 1, dims)
          where (idx == 0) idx = n
          where (idx == n + 1) idx = 1
          if (a(i, j, kk) /= value(c, idx(1), idx(2), idx(3))) then
            write (*, '(a, i0, a, 3i4)') 'rank ', me, ' FAILED: ghost cell ', i, j, kk
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
          end if
          s = s + a(i, j, kk)
        end do
      end do
    end do
  end subroutine check

end program halo
