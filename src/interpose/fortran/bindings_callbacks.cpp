// The Fortran entry points of the functions that take Fortran procedures
// (served.list marks them `hand`): MPI_WIN_CREATE_KEYVAL and
// MPI_WIN_CREATE_ERRHANDLER.
//
// The keyval or error handler is created by the MPI's own Fortran binding
// (the next definition of the same symbol), so the MPI's windows treat the
// callbacks as Fortran's, exactly as without dtmpi. dtmpi's windows keep
// attributes and error handlers themselves (rma/window.hpp) and call the
// callbacks on their own; a Fortran procedure takes every argument by
// reference and handles as Fortran INTEGERs, so they are noted as foreign
// callbacks with a caller here that converts C's arguments. Without this, a
// Fortran delete callback was never called on dtmpi's windows under Open MPI
// (its binding creates the keyval internally) and called with C's by-value
// arguments under MPICH (its mpif.h binding calls the C MPI_Win_create_keyval
// dtmpi serves): a crash on MPI_Win_free.
#include <dlfcn.h>

#include "base/log.hpp"
#include "rma/window.hpp"
#ifdef MPICH
#include "interpose/fortran/binding_mpich_f08.hpp"
#else
#include "interpose/fortran/binding.hpp"
#endif

namespace {

namespace f = dtmpi::interpose::fortran;

// The Fortran procedures' interfaces (MPI standard, mpif.h / use mpi; mpi_f08's
// TYPE(MPI_Win) is one INTEGER in memory, so the same)
using FortranDelete = void (*)(MPI_Fint* win, MPI_Fint* keyval, MPI_Aint* value, MPI_Aint* extra, MPI_Fint* ierror);
using FortranErrhandler = void (*)(MPI_Fint* win, MPI_Fint* code);
// The MPI's own Fortran entry points, as the Fortran program calls them
using CreateKeyval = void (*)(void* copy_fn, void* delete_fn, MPI_Fint* keyval, MPI_Aint* extra, MPI_Fint* ierror);
using CreateErrhandler = void (*)(void* fn, MPI_Fint* errhandler, MPI_Fint* ierror);

int call_delete(void* fn, MPI_Win win, int keyval, void* value, void* extra) {
  MPI_Fint win_f = MPI_Win_c2f(win);
  MPI_Fint keyval_f = keyval;  // user keyvals are the same in both languages (both MPIs)
  MPI_Aint value_f = reinterpret_cast<MPI_Aint>(value);  // as Fortran set it (binding.hpp, attr_in)
  MPI_Aint extra_f = reinterpret_cast<MPI_Aint>(extra);
  MPI_Fint ierror = MPI_SUCCESS;
  reinterpret_cast<FortranDelete>(fn)(&win_f, &keyval_f, &value_f, &extra_f, &ierror);
  return ierror;
}

void call_errhandler(void* fn, MPI_Win* win, int* code) {
  MPI_Fint win_f = MPI_Win_c2f(*win);
  MPI_Fint code_f = *code;
  reinterpret_cast<FortranErrhandler>(fn)(&win_f, &code_f);
}

// The next definition of `name` after dtmpi's (the MPI's Fortran library,
// loaded with the Fortran program that calls it), looked up once.
template <class Fn>
Fn next(const char* name) {
  void* sym = dlsym(RTLD_NEXT, name);
  if (!sym) DTMPI_LOG(kError, "the MPI's Fortran entry point %s was not found: %s", name, dlerror());
  return reinterpret_cast<Fn>(sym);
}

void create_keyval(CreateKeyval real, void* copy_fn, void* delete_fn, MPI_Fint* keyval, MPI_Aint* extra,
                   MPI_Fint* ierror) {
  MPI_Fint rc = MPI_ERR_INTERN;
  if (real) real(copy_fn, delete_fn, keyval, extra, &rc);
  if (rc == MPI_SUCCESS)
    dtmpi::rma::note_foreign_keyval(static_cast<int>(*keyval), &call_delete, delete_fn,
                                    reinterpret_cast<void*>(*extra));
  f::set_ierror(ierror, rc);
}

void create_errhandler(CreateErrhandler real, void* fn, MPI_Fint* errhandler, MPI_Fint* ierror) {
  MPI_Fint rc = MPI_ERR_INTERN;
  if (real) real(fn, errhandler, &rc);
  if (rc == MPI_SUCCESS) dtmpi::rma::note_foreign_errhandler(MPI_Errhandler_f2c(*errhandler), &call_errhandler, fn);
  f::set_ierror(ierror, rc);
}

}  // namespace

#define KEYVAL_PARAMS (void* copy_fn, void* delete_fn, MPI_Fint* keyval, MPI_Aint* extra_state, MPI_Fint* ierror)
#define ERRHANDLER_PARAMS (void* fn, MPI_Fint* errhandler, MPI_Fint* ierror)

#ifdef MPICH
// MPI_WIN_CREATE_KEYVAL(WIN_COPY_ATTR_FN, WIN_DELETE_ATTR_FN, WIN_KEYVAL, EXTRA_STATE, IERROR), mpif.h / use mpi
DTMPI_FORTRAN_MPICH_ENTRY(win_create_keyval, WIN_CREATE_KEYVAL, KEYVAL_PARAMS) {
  static const auto real = next<CreateKeyval>("mpi_win_create_keyval_");
  create_keyval(real, copy_fn, delete_fn, keyval, extra_state, ierror);
}
// use mpi_f08 (MPICH's procedure calls PMPI_Win_create_keyval)
DTMPI_FORTRAN_F08_ENTRY(win_create_keyval, KEYVAL_PARAMS) {
  static const auto real = next<CreateKeyval>("mpi_win_create_keyval_f08_");
  create_keyval(real, copy_fn, delete_fn, keyval, extra_state, ierror);
}
// MPI_WIN_CREATE_ERRHANDLER(WIN_ERRHANDLER_FN, ERRHANDLER, IERROR)
DTMPI_FORTRAN_MPICH_ENTRY(win_create_errhandler, WIN_CREATE_ERRHANDLER, ERRHANDLER_PARAMS) {
  static const auto real = next<CreateErrhandler>("mpi_win_create_errhandler_");
  create_errhandler(real, fn, errhandler, ierror);
}
DTMPI_FORTRAN_F08_ENTRY(win_create_errhandler, ERRHANDLER_PARAMS) {
  static const auto real = next<CreateErrhandler>("mpi_win_create_errhandler_f08_");
  create_errhandler(real, fn, errhandler, ierror);
}
#else
// Open MPI: ompi_x_f (which its mpi_f08 procedures call too) and the mpif.h names
DTMPI_FORTRAN_ENTRY(win_create_keyval, WIN_CREATE_KEYVAL, KEYVAL_PARAMS) {
  static const auto real = next<CreateKeyval>("ompi_win_create_keyval_f");
  create_keyval(real, copy_fn, delete_fn, keyval, extra_state, ierror);
}
DTMPI_FORTRAN_ENTRY(win_create_errhandler, WIN_CREATE_ERRHANDLER, ERRHANDLER_PARAMS) {
  static const auto real = next<CreateErrhandler>("ompi_win_create_errhandler_f");
  create_errhandler(real, fn, errhandler, ierror);
}
#endif
