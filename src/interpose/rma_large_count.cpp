// The MPI-4 large-count forms of the one-sided calls (MPI_Put_c, ...,
// MPI_Win_create_c), where the system MPI has them (MPICH 4; Open MPI 4.1 has
// none). Without them a dtmpi window's handle reached the system MPI, which
// knows no such window (MPICH's Fortran 2008 large-count procedures call
// these too). On dtmpi's windows src/rma serves them with 64-bit counts; on
// the system MPI's, a call whose counts fit an int takes the int form (GPU
// buffers get their host stand-ins there), and one that does not passes
// through, unless a buffer is GPU memory (MPI_ERR_COUNT: the stand-ins count
// in ints; never a device pointer to the system MPI).
#ifdef DTMPI_HAVE_MPI_LARGE_COUNT
#include <climits>

#include "base/system_mpi.hpp"
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "rma/ops.hpp"
#include "rma/standin.hpp"
#include "rma/window.hpp"

namespace rma = dtmpi::rma;
using dtmpi::interpose::result;
using dtmpi::interpose::win_result;

namespace {

bool fits(MPI_Count c) { return c >= 0 && c <= INT_MAX; }
bool fits(MPI_Count a, MPI_Count b) { return fits(a) && fits(b); }
bool fits(MPI_Count a, MPI_Count b, MPI_Count c) { return fits(a) && fits(b) && fits(c); }

// A system window's call whose counts do not fit an int, with a GPU buffer.
int too_large_for_stand_in(MPI_Win win) {
  return win_result(win, dtmpi::Error{MPI_ERR_COUNT, "a GPU buffer of more than INT_MAX elements in a one-sided "
                                                     "call on the system MPI's window (host stand-ins count in ints)"});
}

// A window's displacement unit as the int the windows keep.
bool disp_unit_fits(MPI_Aint d) { return d > 0 && d <= INT_MAX; }

}  // namespace

// On dtmpi's window `win`: served by src/rma (progress first, as every one-sided call).
#define DTMPI_RMA_SERVE_C(win, served)  \
  if (rma::Window* w_ = rma::find(win)) { \
    rma::progress();                      \
    return result(*w_, served);           \
  }

DTMPI_EXPORT int MPI_Put_c(const void* origin, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                           MPI_Count tcount, MPI_Datatype ttype, MPI_Win win) {
  DTMPI_RMA_SERVE_C(win, rma::put(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype},
                                  nullptr));
  if (fits(ocount, tcount))
    return MPI_Put(origin, static_cast<int>(ocount), otype, target, disp, static_cast<int>(tcount), ttype, win);
  if (rma::needs_stand_in(origin)) return too_large_for_stand_in(win);
  return REAL(MPI_Put_c)(origin, ocount, otype, target, disp, tcount, ttype, win);
}

DTMPI_EXPORT int MPI_Get_c(void* origin, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                           MPI_Count tcount, MPI_Datatype ttype, MPI_Win win) {
  DTMPI_RMA_SERVE_C(win, rma::get(*w_, {origin, ocount, otype}, {target, disp, tcount, ttype}, nullptr));
  if (fits(ocount, tcount))
    return MPI_Get(origin, static_cast<int>(ocount), otype, target, disp, static_cast<int>(tcount), ttype, win);
  if (rma::needs_stand_in(origin)) return too_large_for_stand_in(win);
  return REAL(MPI_Get_c)(origin, ocount, otype, target, disp, tcount, ttype, win);
}

DTMPI_EXPORT int MPI_Accumulate_c(const void* origin, MPI_Count ocount, MPI_Datatype otype, int target,
                                  MPI_Aint disp, MPI_Count tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  DTMPI_RMA_SERVE_C(win, rma::accumulate(*w_, {const_cast<void*>(origin), ocount, otype},
                                         {target, disp, tcount, ttype}, op, nullptr));
  if (fits(ocount, tcount))
    return MPI_Accumulate(origin, static_cast<int>(ocount), otype, target, disp, static_cast<int>(tcount), ttype, op,
                          win);
  if (rma::needs_stand_in(origin)) return too_large_for_stand_in(win);
  return REAL(MPI_Accumulate_c)(origin, ocount, otype, target, disp, tcount, ttype, op, win);
}

DTMPI_EXPORT int MPI_Get_accumulate_c(const void* origin, MPI_Count ocount, MPI_Datatype otype, void* res,
                                      MPI_Count rcount, MPI_Datatype rtype, int target, MPI_Aint disp,
                                      MPI_Count tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  DTMPI_RMA_SERVE_C(win, rma::get_accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {res, rcount, rtype},
                                             {target, disp, tcount, ttype}, op, nullptr));
  if (fits(ocount, rcount, tcount))
    return MPI_Get_accumulate(origin, static_cast<int>(ocount), otype, res, static_cast<int>(rcount), rtype, target,
                              disp, static_cast<int>(tcount), ttype, op, win);
  if (rma::needs_stand_in(origin) || rma::needs_stand_in(res)) return too_large_for_stand_in(win);
  return REAL(MPI_Get_accumulate_c)(origin, ocount, otype, res, rcount, rtype, target, disp, tcount, ttype, op, win);
}

DTMPI_EXPORT int MPI_Rput_c(const void* origin, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                            MPI_Count tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_SERVE_C(win, rma::put(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype},
                                  request));
  if (fits(ocount, tcount))
    return MPI_Rput(origin, static_cast<int>(ocount), otype, target, disp, static_cast<int>(tcount), ttype, win,
                    request);
  if (rma::needs_stand_in(origin)) return too_large_for_stand_in(win);
  return REAL(MPI_Rput_c)(origin, ocount, otype, target, disp, tcount, ttype, win, request);
}

DTMPI_EXPORT int MPI_Rget_c(void* origin, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                            MPI_Count tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_SERVE_C(win, rma::get(*w_, {origin, ocount, otype}, {target, disp, tcount, ttype}, request));
  if (fits(ocount, tcount))
    return MPI_Rget(origin, static_cast<int>(ocount), otype, target, disp, static_cast<int>(tcount), ttype, win,
                    request);
  if (rma::needs_stand_in(origin)) return too_large_for_stand_in(win);
  return REAL(MPI_Rget_c)(origin, ocount, otype, target, disp, tcount, ttype, win, request);
}

DTMPI_EXPORT int MPI_Raccumulate_c(const void* origin, MPI_Count ocount, MPI_Datatype otype, int target,
                                   MPI_Aint disp, MPI_Count tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win,
                                   MPI_Request* request) {
  DTMPI_RMA_SERVE_C(win, rma::accumulate(*w_, {const_cast<void*>(origin), ocount, otype},
                                         {target, disp, tcount, ttype}, op, request));
  if (fits(ocount, tcount))
    return MPI_Raccumulate(origin, static_cast<int>(ocount), otype, target, disp, static_cast<int>(tcount), ttype,
                           op, win, request);
  if (rma::needs_stand_in(origin)) return too_large_for_stand_in(win);
  return REAL(MPI_Raccumulate_c)(origin, ocount, otype, target, disp, tcount, ttype, op, win, request);
}

DTMPI_EXPORT int MPI_Rget_accumulate_c(const void* origin, MPI_Count ocount, MPI_Datatype otype, void* res,
                                       MPI_Count rcount, MPI_Datatype rtype, int target, MPI_Aint disp,
                                       MPI_Count tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win,
                                       MPI_Request* request) {
  DTMPI_RMA_SERVE_C(win, rma::get_accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {res, rcount, rtype},
                                             {target, disp, tcount, ttype}, op, request));
  if (fits(ocount, rcount, tcount))
    return MPI_Rget_accumulate(origin, static_cast<int>(ocount), otype, res, static_cast<int>(rcount), rtype, target,
                               disp, static_cast<int>(tcount), ttype, op, win, request);
  if (rma::needs_stand_in(origin) || rma::needs_stand_in(res)) return too_large_for_stand_in(win);
  return REAL(MPI_Rget_accumulate_c)(origin, ocount, otype, res, rcount, rtype, target, disp, tcount, ttype, op, win,
                                     request);
}

// Windows: an int displacement unit takes the int form (the decision whether
// dtmpi serves the window is there). A unit past INT_MAX passes to the system
// MPI for host memory; for GPU memory it is MPI_ERR_DISP (dtmpi's windows keep
// an int), never the device pointer to the system MPI.
DTMPI_EXPORT int MPI_Win_create_c(void* base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                                  MPI_Win* win) {
  if (disp_unit_fits(disp_unit)) return MPI_Win_create(base, size, static_cast<int>(disp_unit), info, comm, win);
  if (rma::needs_stand_in(base))
    return result(comm, dtmpi::Error{MPI_ERR_DISP, "MPI_Win_create_c: a displacement unit past INT_MAX on GPU memory"});
  return REAL(MPI_Win_create_c)(base, size, disp_unit, info, comm, win);
}

DTMPI_EXPORT int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                                    MPI_Win* win) {
  if (disp_unit_fits(disp_unit)) return MPI_Win_allocate(size, static_cast<int>(disp_unit), info, comm, baseptr, win);
  return REAL(MPI_Win_allocate_c)(size, disp_unit, info, comm, baseptr, win);
}

DTMPI_EXPORT int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint* size, MPI_Aint* disp_unit, void* baseptr) {
  if (rma::Window* w = rma::find(win))
    return result(*w, dtmpi::Error{MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query_c on a window that is not shared memory"});
  return REAL(MPI_Win_shared_query_c)(win, rank, size, disp_unit, baseptr);
}

#endif  // DTMPI_HAVE_MPI_LARGE_COUNT
