// MPICH's `use mpi_f08` procedures that dtmpi defines (bindings_mpich_f08.cpp):
// the symbol name, and the conversions whose sentinels or layout differ from
// the mpif.h binding's.
//
// Built for MPICH only. MPICH 4.0's mpi_f08 procedures (libmpichfort:
// mpi_wait_f08_, the Fortran subroutine MPI_Wait_f08 behind the module's
// generic MPI_Wait) call the C MPI_* for the buffer-taking functions, which
// dtmpi serves, but PMPI_* for the others (Init, Finalize, Type_commit, Start,
// Wait, Test, ...): those would reach the system MPI behind dtmpi's back
// (persistent requests started without it, completions it never sees). Being
// loaded first, dtmpi's mpi_wait_f08_ wins for the program; it converts the
// f08 arguments and calls dtmpi's C entry point. served.list marks which
// functions (mpich_f08); the others stay MPICH's own.
//
// MPICH's f08 argument conventions (its wrappers_f/*.F90, gfortran, no
// BIND(C) on the procedures): every argument by reference; handles are
// TYPE(MPI_Comm) etc., a sequence of one INTEGER (MPI_VAL), so a handle is an
// MPI_Fint in memory and an array of handles an MPI_Fint array; LOGICAL is
// gfortran's default (4 bytes, .TRUE. = 1); the OPTIONAL ierror arrives as a
// null pointer when omitted (set_ierror checks); TYPE(MPI_Status) is
// MPI_F08_status.
#pragma once
#include "interpose/fortran/binding.hpp"

#define DTMPI_FORTRAN_F08_ENTRY(lower, params)                                        \
  extern "C" __attribute__((visibility("default"))) void mpi_##lower##_f08_ params; \
  extern "C" void mpi_##lower##_f08_ params

// MPICH's mpif.h / `use mpi` procedures that bypass its C MPI_* (the
// functions served.list marks mpich_mpif: MPI_Win_get_attr/set_attr call
// MPII_Win_get_attr): mpi_x_ and the aliases MPICH exports beside it.
#define DTMPI_FORTRAN_MPICH_ENTRY(lower, upper, params)                                 \
  extern "C" __attribute__((visibility("default"))) void mpi_##lower##_ params;        \
  DTMPI_FORTRAN_ALIAS(mpi_##lower##__, mpi_##lower##_, params)                          \
  DTMPI_FORTRAN_ALIAS(mpi_##lower, mpi_##lower##_, params)                              \
  DTMPI_FORTRAN_ALIAS(MPI_##upper, mpi_##lower##_, params)                              \
  extern "C" void mpi_##lower##_ params

// MPICH's mpi_f08 MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are variables of its
// mpi_f08_link_constants module, defined in libmpichfort only (gfortran's
// module mangling). Weak: libdtmpi-mpich loads into C programs too, which
// have no libmpichfort and make no f08 calls. MPI_STATUS_IGNORE and
// MPI_STATUSES_IGNORE are MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ (mpi.h).
extern "C" {
extern int dtmpi_mpich_f08_unweighted __asm__("__mpi_f08_link_constants_MOD_mpi_unweighted")
    __attribute__((weak));
extern int dtmpi_mpich_f08_weights_empty __asm__("__mpi_f08_link_constants_MOD_mpi_weights_empty")
    __attribute__((weak));
}

namespace dtmpi::interpose::fortran {

// The f08 status and the C one are both MPICH's five ints, in the same order
// today; converted field by field anyway (MPI_Status_f082c would do it, but it
// lives in libmpichfort, which libdtmpi-mpich does not link).
static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "MPI_Status gained fields: convert them too");
inline void f082c(const MPI_F08_status& f, MPI_Status& c) {
  c.count_lo = f.count_lo;
  c.count_hi_and_cancelled = f.count_hi_and_cancelled;
  c.MPI_SOURCE = f.MPI_SOURCE;
  c.MPI_TAG = f.MPI_TAG;
  c.MPI_ERROR = f.MPI_ERROR;
}
inline void c2f08(const MPI_Status& c, MPI_F08_status& f) {
  f.count_lo = c.count_lo;
  f.count_hi_and_cancelled = c.count_hi_and_cancelled;
  f.MPI_SOURCE = c.MPI_SOURCE;
  f.MPI_TAG = c.MPI_TAG;
  f.MPI_ERROR = c.MPI_ERROR;
}

inline const int* f08_weights(const MPI_Fint* p) {
  if (&dtmpi_mpich_f08_unweighted != nullptr && p == &dtmpi_mpich_f08_unweighted) return MPI_UNWEIGHTED;
  if (&dtmpi_mpich_f08_weights_empty != nullptr && p == &dtmpi_mpich_f08_weights_empty) return MPI_WEIGHTS_EMPTY;
  return ints(p);
}

// One f08 status, or MPI_STATUS_IGNORE; as Status (binding.hpp), a call that
// does not set it leaves the caller's unchanged.
class F08Status {
 public:
  explicit F08Status(MPI_F08_status* f) : f_(f == &MPIR_F08_MPI_STATUS_IGNORE_OBJ ? nullptr : f) {
    if (f_) f082c(*f_, c_);
  }
  MPI_Status* c() { return f_ ? &c_ : MPI_STATUS_IGNORE; }
  void write_back() {
    if (f_) c2f08(c_, *f_);
  }

 private:
  MPI_F08_status* f_;
  MPI_Status c_{};
};

// An array of f08 statuses (capacity: the requests), or MPI_STATUSES_IGNORE.
class F08Statuses {
 public:
  F08Statuses(MPI_F08_status* f, int capacity)
      : f_(f == MPIR_F08_MPI_STATUSES_IGNORE_OBJ ? nullptr : f), c_(f_ ? capacity : 0) {
    for (std::size_t i = 0; i < c_.size(); ++i) f082c(f_[i], c_.data()[i]);
  }
  MPI_Status* c() { return f_ ? c_.data() : MPI_STATUSES_IGNORE; }
  void write_back(int n) {  // the first n (Waitsome's outcount; MPI_UNDEFINED: none)
    if (!f_) return;
    for (int i = 0; i < n && static_cast<std::size_t>(i) < c_.size(); ++i) c2f08(c_.data()[i], f_[i]);
  }

 private:
  MPI_F08_status* f_;
  Scratch<MPI_Status, 8> c_;
};

}  // namespace dtmpi::interpose::fortran
