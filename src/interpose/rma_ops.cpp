// One-sided operations and synchronization calls: dtmpi's windows are served
// by src/rma; the system MPI's pass through, except that a GPU origin
// buffer is never handed to a system MPI that cannot take it.
#include <atomic>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "rma/ops.hpp"
#include "rma/sync.hpp"
#include "rma/window.hpp"
#include "runtime/pointer_kind.hpp"
#include "transport/peers.hpp"

namespace rma = dtmpi::rma;
using dtmpi::interpose::result;

namespace {

// A GPU buffer in an operation on the system MPI's window: refused (the
// system MPI would dereference it) unless it takes device memory.
bool refuse_device(const void* buf) {
  return buf && dtmpi::runtime::on_gpu(dtmpi::runtime::pointer_info(buf)) &&
         !dtmpi::transport::mpi_takes_device_memory();
}

int refused(MPI_Win win) {
  // the system MPI's window: its error handler, through the system MPI
  const int code = MPI_ERR_BUFFER;
  DTMPI_LOG(kError,
            "a one-sided operation with GPU memory on a window of host memory that the system MPI serves: create "
            "the window over device memory, or with DTMPI_RMA=all, for dtmpi to serve it (docs/rma.md)");
  REAL(MPI_Win_call_errhandler)(win, code);
  return code;
}

}  // namespace

// Serves the call on dtmpi's window `win` (progress first, so that this rank
// answers its peers on every one-sided call), else forwards it.
#define DTMPI_RMA_CALL(win, served, forwarded)            \
  if (rma::Window* w_ = rma::find(win)) {                 \
    rma::progress();                                      \
    return result(*w_, served);                           \
  }                                                       \
  return forwarded

DTMPI_EXPORT int MPI_Put(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                         MPI_Datatype ttype, MPI_Win win) {
  DTMPI_RMA_CALL(win,
                 rma::put(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype}, nullptr),
                 refuse_device(origin) ? refused(win)
                                       : REAL(MPI_Put)(origin, ocount, otype, target, disp, tcount, ttype, win));
}

DTMPI_EXPORT int MPI_Get(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                         MPI_Datatype ttype, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::get(*w_, {origin, ocount, otype}, {target, disp, tcount, ttype}, nullptr),
                 refuse_device(origin) ? refused(win)
                                       : REAL(MPI_Get)(origin, ocount, otype, target, disp, tcount, ttype, win));
}

DTMPI_EXPORT int MPI_Accumulate(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                                int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  DTMPI_RMA_CALL(
      win, rma::accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype}, op, nullptr),
      refuse_device(origin) ? refused(win)
                            : REAL(MPI_Accumulate)(origin, ocount, otype, target, disp, tcount, ttype, op, win));
}

DTMPI_EXPORT int MPI_Get_accumulate(const void* origin, int ocount, MPI_Datatype otype, void* res, int rcount,
                                    MPI_Datatype rtype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
                                    MPI_Op op, MPI_Win win) {
  DTMPI_RMA_CALL(win,
                 rma::get_accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {res, rcount, rtype},
                                     {target, disp, tcount, ttype}, op, nullptr),
                 refuse_device(origin) || refuse_device(res)
                     ? refused(win)
                     : REAL(MPI_Get_accumulate)(origin, ocount, otype, res, rcount, rtype, target, disp, tcount, ttype,
                                                op, win));
}

DTMPI_EXPORT int MPI_Fetch_and_op(const void* origin, void* res, MPI_Datatype type, int target, MPI_Aint disp,
                                  MPI_Op op, MPI_Win win) {
  DTMPI_RMA_CALL(win,
                 rma::get_accumulate(*w_, {const_cast<void*>(origin), 1, type}, {res, 1, type}, {target, disp, 1, type},
                                     op, nullptr),
                 refuse_device(origin) || refuse_device(res)
                     ? refused(win)
                     : REAL(MPI_Fetch_and_op)(origin, res, type, target, disp, op, win));
}

DTMPI_EXPORT int MPI_Compare_and_swap(const void* origin, const void* compare, void* res, MPI_Datatype type,
                                      int target, MPI_Aint disp, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::compare_and_swap(*w_, origin, compare, res, type, target, disp),
                 refuse_device(origin) || refuse_device(compare) || refuse_device(res)
                     ? refused(win)
                     : REAL(MPI_Compare_and_swap)(origin, compare, res, type, target, disp, win));
}

DTMPI_EXPORT int MPI_Rput(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                          MPI_Datatype ttype, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_CALL(win,
                 rma::put(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype}, request),
                 refuse_device(origin)
                     ? refused(win)
                     : REAL(MPI_Rput)(origin, ocount, otype, target, disp, tcount, ttype, win, request));
}

DTMPI_EXPORT int MPI_Rget(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                          MPI_Datatype ttype, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_CALL(win, rma::get(*w_, {origin, ocount, otype}, {target, disp, tcount, ttype}, request),
                 refuse_device(origin)
                     ? refused(win)
                     : REAL(MPI_Rget)(origin, ocount, otype, target, disp, tcount, ttype, win, request));
}

DTMPI_EXPORT int MPI_Raccumulate(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                                 int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_CALL(
      win, rma::accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype}, op, request),
      refuse_device(origin)
          ? refused(win)
          : REAL(MPI_Raccumulate)(origin, ocount, otype, target, disp, tcount, ttype, op, win, request));
}

DTMPI_EXPORT int MPI_Rget_accumulate(const void* origin, int ocount, MPI_Datatype otype, void* res, int rcount,
                                     MPI_Datatype rtype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
                                     MPI_Op op, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_CALL(win,
                 rma::get_accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {res, rcount, rtype},
                                     {target, disp, tcount, ttype}, op, request),
                 refuse_device(origin) || refuse_device(res)
                     ? refused(win)
                     : REAL(MPI_Rget_accumulate)(origin, ocount, otype, res, rcount, rtype, target, disp, tcount,
                                                 ttype, op, win, request));
}

DTMPI_EXPORT int MPI_Win_fence(int assert_flags, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::fence(*w_, assert_flags), REAL(MPI_Win_fence)(assert_flags, win));
}
DTMPI_EXPORT int MPI_Win_post(MPI_Group group, int assert_flags, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::post(*w_, group, assert_flags), REAL(MPI_Win_post)(group, assert_flags, win));
}
DTMPI_EXPORT int MPI_Win_start(MPI_Group group, int assert_flags, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::start(*w_, group, assert_flags), REAL(MPI_Win_start)(group, assert_flags, win));
}
DTMPI_EXPORT int MPI_Win_complete(MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::complete(*w_), REAL(MPI_Win_complete)(win));
}
DTMPI_EXPORT int MPI_Win_wait(MPI_Win win) { DTMPI_RMA_CALL(win, rma::wait(*w_), REAL(MPI_Win_wait)(win)); }
DTMPI_EXPORT int MPI_Win_test(MPI_Win win, int* flag) {
  DTMPI_RMA_CALL(win, rma::test(*w_, flag), REAL(MPI_Win_test)(win, flag));
}
DTMPI_EXPORT int MPI_Win_lock(int lock_type, int rank, int assert_flags, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::lock(*w_, lock_type, rank, assert_flags),
                 REAL(MPI_Win_lock)(lock_type, rank, assert_flags, win));
}
DTMPI_EXPORT int MPI_Win_unlock(int rank, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::unlock(*w_, rank), REAL(MPI_Win_unlock)(rank, win));
}
DTMPI_EXPORT int MPI_Win_lock_all(int assert_flags, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::lock_all(*w_, assert_flags), REAL(MPI_Win_lock_all)(assert_flags, win));
}
DTMPI_EXPORT int MPI_Win_unlock_all(MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::unlock_all(*w_), REAL(MPI_Win_unlock_all)(win));
}
DTMPI_EXPORT int MPI_Win_flush(int rank, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::flush(*w_, rank), REAL(MPI_Win_flush)(rank, win));
}
DTMPI_EXPORT int MPI_Win_flush_all(MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::flush_all(*w_), REAL(MPI_Win_flush_all)(win));
}
DTMPI_EXPORT int MPI_Win_flush_local(int rank, MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::flush_local(*w_, rank), REAL(MPI_Win_flush_local)(rank, win));
}
DTMPI_EXPORT int MPI_Win_flush_local_all(MPI_Win win) {
  DTMPI_RMA_CALL(win, rma::flush_local_all(*w_), REAL(MPI_Win_flush_local_all)(win));
}
DTMPI_EXPORT int MPI_Win_sync(MPI_Win win) {
  // dtmpi's windows are MPI_WIN_SEPARATE and applied by this process's own
  // progress: a memory fence is all that is left to do
  DTMPI_RMA_CALL(win, (std::atomic_thread_fence(std::memory_order_seq_cst), dtmpi::ok_status()),
                 REAL(MPI_Win_sync)(win));
}

// A barrier while dtmpi's windows exist progresses them: a target that
// reaches MPI_Barrier before a peer's passive-target epoch to it ended
// serves that epoch instead of blocking it (the common lock; put; unlock;
// barrier program).
DTMPI_EXPORT int MPI_Barrier(MPI_Comm comm) {
  if (rma::g_windows.load(std::memory_order_relaxed) == 0) return REAL(MPI_Barrier)(comm);
  MPI_Request r = MPI_REQUEST_NULL;
  dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Ibarrier)(comm, &r));
  if (!s) return result(comm, s);
  for (;;) {
    int done = 0;
    s = DTMPI_MPI_FORWARD(REAL(MPI_Test)(&r, &done, MPI_STATUS_IGNORE));
    if (!s || done) return result(comm, s);
    rma::progress();
  }
}
