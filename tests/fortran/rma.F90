! One-sided communication from Fortran, on 2 ranks: a window over an array
! (MPI_Win_create), fence epochs with MPI_Put into a vector target type and
! MPI_Get into a vector origin type, a passive-target epoch
! (MPI_Win_lock/unlock) with MPI_Accumulate (MPI_SUM), MPI_Barrier, the
! window's attributes (MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_BASE) and
! name, MPI_Win_free. Every result is checked here against values computed
! in the program; rank 0 prints them, which must be the same with and without
! dtmpi preloaded (preloaded with DTMPI_RMA=all, dtmpi serves the window:
! check-fortran.sh). Also a window keyval created from Fortran with a delete
! callback written in Fortran (called by MPI_Win_delete_attr and MPI_Win_free
! with the window, the value and the extra state) and a window error handler
! written in Fortran (called for an MPI_Put to a rank outside the window's
! group, with the window and an MPI_ERR_RANK code).
! -DDTMPI_F08: use mpi_f08; otherwise use mpi.
#ifdef DTMPI_F08
#define DATATYPE type(MPI_Datatype)
#define WINDOW type(MPI_Win)
#define OPT_IERR
#else
#define DATATYPE integer
#define WINDOW integer
#define OPT_IERR , ierr
#endif
module rma_callbacks
#ifdef DTMPI_F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer :: deletes = 0, errors = 0, last_code = 0
  integer(kind=MPI_ADDRESS_KIND) :: last_value = -1, last_extra = -1
  logical :: same_window = .true.
  WINDOW :: watched
contains
  subroutine on_delete(win, keyval, value, extra, ierror)
    WINDOW :: win
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: value, extra
    deletes = deletes + 1
    last_value = value
    last_extra = extra
    ! (the window is not compared: Open MPI 4.1.4's own binding passes MPI_WIN_NULL)
    if (keyval == MPI_KEYVAL_INVALID) same_window = .false.
    ierror = MPI_SUCCESS
  end subroutine on_delete
  subroutine on_error(win, code)
    WINDOW :: win
    integer :: code
    errors = errors + 1
    last_code = code
    same_window = same_window .and. (win == watched)
  end subroutine on_error
end module rma_callbacks
program rma
  use rma_callbacks
#ifdef DTMPI_F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer, parameter :: n = 16
  integer, parameter :: ak = MPI_ADDRESS_KIND
  integer :: ierr, me, np, peer, i, k, len, keyval, eclass, hclass, ierr2
#ifdef DTMPI_F08
  type(MPI_Errhandler) :: errh
#else
  integer :: errh
#endif
  DATATYPE :: vec
  WINDOW :: win
  double precision :: a(n), src(4), got(8), contrib(4), want(n), wgot(8)
  integer(kind=MPI_ADDRESS_KIND) :: val, winsize
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: wname

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  if (np /= 2) call fail('needs 2 ranks')
  peer = 1 - me
  do i = 1, n
    a(i) = me * 100 + i
  end do
  winsize = n * 8
  call MPI_Win_create(a, winsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Win_create')

  ! attributes: Fortran gets the values (the base as an address)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  if (.not. flag .or. val /= winsize) call fail('MPI_WIN_SIZE')
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, val, flag OPT_IERR)
  if (.not. flag .or. val /= 8) call fail('MPI_WIN_DISP_UNIT')
  call MPI_Win_get_attr(win, MPI_WIN_BASE, val, flag, ierr)
  if (.not. flag .or. val == 0) call fail('MPI_WIN_BASE')
  call MPI_Win_set_name(win, 'fortran window  ', ierr)
  call MPI_Win_get_name(win, wname, len, ierr)
  if (len /= 14) call fail('MPI_Win_get_name length')
#ifndef DTMPI_F08
  ! Open MPI 4.1.4's mpi_f08 MPI_Win_get_name hands its Fortran binding a
  ! name of length 1 (plain run: 'f' and blanks), so the name is compared
  ! with use mpi only
  if (wname /= 'fortran window') call fail('MPI_Win_get_name')
#endif

  ! fence: put 4 contiguous doubles into the peer's a(1), a(3), a(5), a(7)
  call MPI_Type_vector(4, 1, 2, MPI_DOUBLE_PRECISION, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  do k = 1, 4
    src(k) = me * 1000 + k
  end do
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(src, 4, MPI_DOUBLE_PRECISION, peer, 0_ak, 1, vec, win, ierr)
  call MPI_Win_fence(0, win OPT_IERR)
  ! get the peer's a(9:12) into got(1), got(3), got(5), got(7)
  got = -1
  call MPI_Win_fence(MPI_MODE_NOPRECEDE, win, ierr)
  call MPI_Get(got, 1, vec, peer, 8_ak, 4, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Win_fence(MPI_MODE_NOSUCCEED, win, ierr)

  ! passive target: add (me + 1) * k to the peer's a(12 + k)
  do k = 1, 4
    contrib(k) = (me + 1) * k
  end do
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win, ierr)
  call MPI_Accumulate(contrib, 4, MPI_DOUBLE_PRECISION, peer, 12_ak, 4, MPI_DOUBLE_PRECISION, MPI_SUM, win, ierr)
  call MPI_Win_unlock(peer, win OPT_IERR)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win, ierr)
  do i = 1, n
    want(i) = me * 100 + i
  end do
  do k = 1, 4
    want(2 * k - 1) = peer * 1000 + k
    want(12 + k) = want(12 + k) + (peer + 1) * k
  end do
  if (any(a /= want)) call fail('window contents')
  call MPI_Win_unlock(me, win, ierr)
  wgot = -1
  do k = 1, 4
    wgot(2 * k - 1) = peer * 100 + 8 + k
  end do
  if (any(got /= wgot)) call fail('MPI_Get')

  ! a keyval and an error handler written in Fortran
  watched = win
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, keyval, 7_ak, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Win_create_keyval')
  call MPI_Win_set_attr(win, keyval, 42_ak, ierr)
  call MPI_Win_get_attr(win, keyval, val, flag, ierr)
  if (.not. flag .or. val /= 42) call fail('user attribute')
  call MPI_Win_delete_attr(win, keyval, ierr)
  if (ierr /= MPI_SUCCESS .or. deletes /= 1 .or. last_value /= 42 .or. last_extra /= 7 .or. .not. same_window) &
    call fail('delete callback on MPI_Win_delete_attr')
  call MPI_Win_set_attr(win, keyval, 43_ak, ierr)  ! deleted by MPI_Win_free
  call MPI_Win_create_errhandler(on_error, errh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Win_create_errhandler')
  call MPI_Win_set_errhandler(win, errh, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(src, 4, MPI_DOUBLE_PRECISION, np + 3, 0_ak, 4, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Error_class(ierr, eclass, ierr2)
  call MPI_Error_class(last_code, hclass, ierr2)
  call MPI_Win_fence(0, win, ierr2)
  if (errors /= 1 .or. eclass /= MPI_ERR_RANK .or. hclass /= MPI_ERR_RANK .or. .not. same_window) &
    call fail('error handler on an MPI_Put to a rank outside the window')
  call MPI_Errhandler_free(errh, ierr)

  call MPI_Win_free(win, ierr)
  if (ierr /= MPI_SUCCESS .or. win /= MPI_WIN_NULL) call fail('MPI_Win_free')
  if (deletes /= 2 .or. last_value /= 43 .or. last_extra /= 7 .or. .not. same_window) &
    call fail('delete callback on MPI_Win_free')
  call MPI_Win_free_keyval(keyval, ierr)
  call MPI_Type_free(vec, ierr)
  if (me == 0) then
    write (*, '(a, 16f8.0)') 'window ', a
    write (*, '(a, 8f7.0)') 'got ', got
    write (*, '(a, i0, a)') 'size ', winsize, ' ok'
    write (*, '(a, i0, a, i0, a, i0)') 'callbacks: deletes ', deletes, ' errors ', errors, ' value ', last_value
  end if
  call MPI_Finalize(ierr)

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write (*, '(a, i0, 2a)') 'FAIL rank ', me, ': ', what
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine fail

end program rma
