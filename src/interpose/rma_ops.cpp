// One-sided operations and synchronization calls: dtmpi's windows are served
// by src/rma; the system MPI's pass through, with a host stand-in for every
// GPU buffer the system MPI cannot take (rma/standin.hpp).
#include <atomic>

#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "rma/ops.hpp"
#include "rma/standin.hpp"
#include "rma/sync.hpp"
#include "rma/window.hpp"

namespace rma = dtmpi::rma;
using dtmpi::interpose::result;
using dtmpi::interpose::win_result;

namespace {

// A buffer as the system MPI gets it: the user's, or a host stand-in.
struct Arg {
  const void* ptr;
  int count;
  MPI_Datatype type;
};

// Replaces (buf, count, type) by a stand-in when it is GPU memory.
dtmpi::Status host_side(MPI_Win win, int target, Arg& a, bool read, bool write_back) {
  if (!rma::needs_stand_in(a.ptr)) return dtmpi::ok_status();
  auto s = rma::stand_in(win, target, a.ptr, a.count, a.type, read, write_back);
  if (!s) return s.error();
  a = Arg{s.value().ptr, s.value().count, s.value().type};
  return dtmpi::ok_status();
}

}  // namespace

// Serves the call on dtmpi's window `win` (progress first, so that this rank
// answers its peers on every one-sided call).
#define DTMPI_RMA_SERVE(win, served)                      \
  if (rma::Window* w_ = rma::find(win)) {                 \
    rma::progress();                                      \
    return result(*w_, served);                           \
  }
// On the system MPI's window: stand-ins first (any failure is the window's error).
#define DTMPI_RMA_HOST_SIDE(win, target, arg, read, write_back)                   \
  if (dtmpi::Status s_ = host_side(win, target, arg, read, write_back); !s_) \
    return win_result(win, s_)

DTMPI_EXPORT int MPI_Put(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                         MPI_Datatype ttype, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::put(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype}, nullptr));
  Arg o{origin, ocount, otype};
  DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  return REAL(MPI_Put)(o.ptr, o.count, o.type, target, disp, tcount, ttype, win);
}

DTMPI_EXPORT int MPI_Get(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                         MPI_Datatype ttype, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::get(*w_, {origin, ocount, otype}, {target, disp, tcount, ttype}, nullptr));
  Arg o{origin, ocount, otype};
  DTMPI_RMA_HOST_SIDE(win, target, o, false, true);
  return REAL(MPI_Get)(const_cast<void*>(o.ptr), o.count, o.type, target, disp, tcount, ttype, win);
}

DTMPI_EXPORT int MPI_Accumulate(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                                int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype},
                                       op, nullptr));
  Arg o{origin, ocount, otype};
  DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  return REAL(MPI_Accumulate)(o.ptr, o.count, o.type, target, disp, tcount, ttype, op, win);
}

DTMPI_EXPORT int MPI_Get_accumulate(const void* origin, int ocount, MPI_Datatype otype, void* res, int rcount,
                                    MPI_Datatype rtype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
                                    MPI_Op op, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::get_accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {res, rcount, rtype},
                                           {target, disp, tcount, ttype}, op, nullptr));
  Arg o{origin, ocount, otype}, r{res, rcount, rtype};
  if (op != MPI_NO_OP) DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  DTMPI_RMA_HOST_SIDE(win, target, r, false, true);
  return REAL(MPI_Get_accumulate)(o.ptr, o.count, o.type, const_cast<void*>(r.ptr), r.count, r.type, target, disp,
                                  tcount, ttype, op, win);
}

DTMPI_EXPORT int MPI_Fetch_and_op(const void* origin, void* res, MPI_Datatype type, int target, MPI_Aint disp,
                                  MPI_Op op, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::get_accumulate(*w_, {const_cast<void*>(origin), 1, type}, {res, 1, type},
                                           {target, disp, 1, type}, op, nullptr));
  Arg o{origin, 1, type}, r{res, 1, type};
  if (op != MPI_NO_OP) DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  DTMPI_RMA_HOST_SIDE(win, target, r, false, true);
  return REAL(MPI_Fetch_and_op)(o.ptr, const_cast<void*>(r.ptr), type, target, disp, op, win);
}

DTMPI_EXPORT int MPI_Compare_and_swap(const void* origin, const void* compare, void* res, MPI_Datatype type,
                                      int target, MPI_Aint disp, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::compare_and_swap(*w_, origin, compare, res, type, target, disp));
  Arg o{origin, 1, type}, c{compare, 1, type}, r{res, 1, type};
  DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  DTMPI_RMA_HOST_SIDE(win, target, c, true, false);
  DTMPI_RMA_HOST_SIDE(win, target, r, false, true);
  return REAL(MPI_Compare_and_swap)(o.ptr, c.ptr, const_cast<void*>(r.ptr), type, target, disp, win);
}

DTMPI_EXPORT int MPI_Rput(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                          MPI_Datatype ttype, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_SERVE(win, rma::put(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype}, request));
  Arg o{origin, ocount, otype};
  DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  return REAL(MPI_Rput)(o.ptr, o.count, o.type, target, disp, tcount, ttype, win, request);
}

DTMPI_EXPORT int MPI_Rget(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                          MPI_Datatype ttype, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_SERVE(win, rma::get(*w_, {origin, ocount, otype}, {target, disp, tcount, ttype}, request));
  Arg o{origin, ocount, otype};
  DTMPI_RMA_HOST_SIDE(win, target, o, false, true);
  const int rc = REAL(MPI_Rget)(const_cast<void*>(o.ptr), o.count, o.type, target, disp, tcount, ttype, win, request);
  if (rc != MPI_SUCCESS || o.ptr == origin) return rc;
  return win_result(win, rma::wrap_request(win, request));
}

DTMPI_EXPORT int MPI_Raccumulate(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp,
                                 int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_SERVE(win, rma::accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {target, disp, tcount, ttype},
                                       op, request));
  Arg o{origin, ocount, otype};
  DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  return REAL(MPI_Raccumulate)(o.ptr, o.count, o.type, target, disp, tcount, ttype, op, win, request);
}

DTMPI_EXPORT int MPI_Rget_accumulate(const void* origin, int ocount, MPI_Datatype otype, void* res, int rcount,
                                     MPI_Datatype rtype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
                                     MPI_Op op, MPI_Win win, MPI_Request* request) {
  DTMPI_RMA_SERVE(win, rma::get_accumulate(*w_, {const_cast<void*>(origin), ocount, otype}, {res, rcount, rtype},
                                           {target, disp, tcount, ttype}, op, request));
  Arg o{origin, ocount, otype}, r{res, rcount, rtype};
  if (op != MPI_NO_OP) DTMPI_RMA_HOST_SIDE(win, target, o, true, false);
  DTMPI_RMA_HOST_SIDE(win, target, r, false, true);
  const int rc = REAL(MPI_Rget_accumulate)(o.ptr, o.count, o.type, const_cast<void*>(r.ptr), r.count, r.type, target,
                                           disp, tcount, ttype, op, win, request);
  if (rc != MPI_SUCCESS || r.ptr == res) return rc;
  return win_result(win, rma::wrap_request(win, request));
}

// A synchronization call on the system MPI's window, then the stand-ins of
// the operations it completed written back.
#define DTMPI_RMA_SYNC_FORWARD(win, call, target)                  \
  do {                                                             \
    const int rc_ = (call);                                        \
    if (rc_ != MPI_SUCCESS) return rc_;                            \
    return win_result(win, rma::stand_ins_completed(win, target)); \
  } while (0)

DTMPI_EXPORT int MPI_Win_fence(int assert_flags, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::fence(*w_, assert_flags));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_fence)(assert_flags, win), rma::kAllTargets);
}
DTMPI_EXPORT int MPI_Win_post(MPI_Group group, int assert_flags, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::post(*w_, group, assert_flags));
  return REAL(MPI_Win_post)(group, assert_flags, win);
}
DTMPI_EXPORT int MPI_Win_start(MPI_Group group, int assert_flags, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::start(*w_, group, assert_flags));
  return REAL(MPI_Win_start)(group, assert_flags, win);
}
DTMPI_EXPORT int MPI_Win_complete(MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::complete(*w_));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_complete)(win), rma::kAllTargets);
}
DTMPI_EXPORT int MPI_Win_wait(MPI_Win win) { DTMPI_RMA_SERVE(win, rma::wait(*w_));
  return REAL(MPI_Win_wait)(win); }
DTMPI_EXPORT int MPI_Win_test(MPI_Win win, int* flag) {
  DTMPI_RMA_SERVE(win, rma::test(*w_, flag));
  return REAL(MPI_Win_test)(win, flag);
}
DTMPI_EXPORT int MPI_Win_lock(int lock_type, int rank, int assert_flags, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::lock(*w_, lock_type, rank, assert_flags));
  return REAL(MPI_Win_lock)(lock_type, rank, assert_flags, win);
}
DTMPI_EXPORT int MPI_Win_unlock(int rank, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::unlock(*w_, rank));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_unlock)(rank, win), rank);
}
DTMPI_EXPORT int MPI_Win_lock_all(int assert_flags, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::lock_all(*w_, assert_flags));
  return REAL(MPI_Win_lock_all)(assert_flags, win);
}
DTMPI_EXPORT int MPI_Win_unlock_all(MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::unlock_all(*w_));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_unlock_all)(win), rma::kAllTargets);
}
DTMPI_EXPORT int MPI_Win_flush(int rank, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::flush(*w_, rank));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_flush)(rank, win), rank);
}
DTMPI_EXPORT int MPI_Win_flush_all(MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::flush_all(*w_));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_flush_all)(win), rma::kAllTargets);
}
DTMPI_EXPORT int MPI_Win_flush_local(int rank, MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::flush_local(*w_, rank));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_flush_local)(rank, win), rank);
}
DTMPI_EXPORT int MPI_Win_flush_local_all(MPI_Win win) {
  DTMPI_RMA_SERVE(win, rma::flush_local_all(*w_));
  DTMPI_RMA_SYNC_FORWARD(win, REAL(MPI_Win_flush_local_all)(win), rma::kAllTargets);
}
DTMPI_EXPORT int MPI_Win_sync(MPI_Win win) {
  // dtmpi's windows are MPI_WIN_SEPARATE and applied by this process's own
  // progress: a memory fence is all that is left to do
  DTMPI_RMA_SERVE(win, (std::atomic_thread_fence(std::memory_order_seq_cst), dtmpi::ok_status()));
  return REAL(MPI_Win_sync)(win);
}

// A barrier while dtmpi's windows exist progresses them: a target that
// reaches MPI_Barrier before a peer's passive-target epoch to it ended
// serves that epoch instead of blocking it (the common lock; put; unlock;
// barrier program) -- on a communicator one window covers, so that every
// rank takes the same form (collective_needs_progress).
// Without windows, dtmpi's own barrier where DTMPI_COLL selects one (src/coll).
DTMPI_EXPORT int MPI_Barrier(MPI_Comm comm) {
  if (!dtmpi::interpose::collective_needs_progress(comm)) {
    if (!dtmpi::coll::enabled()) return REAL(MPI_Barrier)(comm);
    auto served = dtmpi::coll::barrier(comm, nullptr);
    if (!served) return result(comm, served.error());
    return served.value() ? MPI_SUCCESS : REAL(MPI_Barrier)(comm);
  }
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
