// Reductions on buffers the system MPI cannot take (GPU memory; derived types
// in the host test mode): MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter, MPI_Scan, MPI_Exscan, their non-blocking forms, and
// MPI_Reduce_local. A reduction works element by element on the
// user's own layout, so the buffers are not packed: the span of memory the
// (count, type) touches is copied to host memory as it is (one DMA copy), the
// system MPI reduces there with the user's type and op -- predefined or
// user-defined, any datatype -- and the result span is copied back. Gaps
// inside the result span keep their bytes: the span is read in first unless
// the type is contiguous.
#include <memory>

#include "base/log.hpp"
#include "coll/coll.hpp"
#include "coll/deterministic.hpp"
#include "interpose/coll_staging.hpp"
#include "interpose/export.hpp"
#include "base/system_mpi.hpp"
#include "runtime/streams.hpp"
#include "transport/engine.hpp"
#include "transport/staging.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using namespace dtmpi::interpose;

namespace {

// The bytes (count, type) touches at `buf`, copied to or from host staging.
struct Span {
  void* user = nullptr;
  rt::PointerInfo info;
  int64_t lo = 0;  // first byte touched, relative to `user`
  int64_t bytes = 0;
  bool contiguous = false;
  rt::Staging staging;
  Span() = default;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() { rt::release_staging(staging); }
  // What the system MPI is given: the staging buffer where `user` would be.
  void* mpi_ptr() const { return static_cast<char*>(staging.ptr) - lo; }
  int device() const { return rt::on_gpu(info) ? info.device : -1; }
};

// Whether (buf, count, type) must be staged; fills the span.
bool needs_span(const void* buf, int count, MPI_Datatype type, Span& s, bool device_taken) {
  if (buf == MPI_IN_PLACE) return false;
  tp::UserBuffer b;
  // GPU memory of a type dtmpi cannot plan (b.refused) is staged too: a span
  // of bytes needs no plan, and the system MPI must not see the device pointer
  if (!must_stage(buf, count, type, b, HostPacking::kNever, nullptr, device_taken) && !b.refused) return false;
  MPI_Aint true_lb = 0, true_extent = 0, lb = 0, extent = 0;
  REAL(MPI_Type_get_true_extent)(type, &true_lb, &true_extent);
  REAL(MPI_Type_get_extent)(type, &lb, &extent);
  const int64_t reach = int64_t{count - 1} * extent;
  s.user = const_cast<void*>(buf);
  s.info = b.info;
  s.lo = true_lb + std::min<int64_t>(0, reach);
  s.bytes = true_lb + true_extent + std::max<int64_t>(0, reach) - s.lo;
  int64_t offset = 0;
  int size = 0;
  REAL(MPI_Type_size)(type, &size);
  s.contiguous = b.plan ? b.plan->contiguous_for_count(count, offset)
                        : true_lb == 0 && true_extent == extent && size == extent;
  return true;
}

dtmpi::Status copy_in(Span& s, bool read_user) {
  auto st = rt::acquire_staging(static_cast<size_t>(s.bytes));
  if (!st) return dtmpi::Error{MPI_ERR_NO_MEM, "no staging buffer for a reduction: " + st.error().what};
  s.staging = st.value();
  if (!read_user) return dtmpi::ok_status();
  auto ok = rt::copy_bytes(s.staging.ptr, static_cast<char*>(s.user) + s.lo, static_cast<size_t>(s.bytes), s.device());
  if (!ok) return dtmpi::Error{MPI_ERR_OTHER, "copying a reduction buffer to the host failed: " + ok.error().what};
  return dtmpi::ok_status();
}

// A reduction in flight: its staged input and result; finish() copies the result back.
struct ReduceCall final : dtmpi::transport::Completion {
  Span in, out;
  bool stage_in = false, stage_out = false;
  dtmpi::Status finish() override {
    if (!stage_out) return dtmpi::ok_status();
    auto ok = rt::copy_bytes(static_cast<char*>(out.user) + out.lo, out.staging.ptr, static_cast<size_t>(out.bytes),
                             out.device());
    if (!ok) return dtmpi::Error{MPI_ERR_OTHER, "copying a reduction result back failed: " + ok.error().what};
    return dtmpi::ok_status();
  }
};

// Runs a reduction: input (sb, in_count) and result (rb, out_count), either
// absent (null) where MPI ignores it on this rank; `read_result`: the result
// buffer's bytes matter before the call (it holds the input in place, or the
// call may leave it as it is). `call(send, recv, req)` calls the system MPI.
// `device_taken`: whether the call's consumer takes device memory as it is
// (reduction_takes_device_memory; the system MPI's MPI_Reduce_local: where
// it is CUDA-aware).
template <class Call>
dtmpi::Status run_reduction_here(bool device_taken, const void* sb, int in_count, void* rb, int out_count,
                                 bool read_result, MPI_Datatype type, MPI_Request* req, Call call) {
  if (!may_stage(type, HostPacking::kNever)) return DTMPI_MPI_FORWARD(call(sb, rb, req));  // nothing to look at
  auto c = std::make_shared<ReduceCall>();
  c->stage_in = sb && needs_span(sb, in_count, type, c->in, device_taken);
  c->stage_out = rb && needs_span(rb, out_count, type, c->out, device_taken);
  if (!c->stage_in && !c->stage_out) return DTMPI_MPI_FORWARD(call(sb, rb, req));
  rt::count(rt::Counter::kStagedCollectives);
  if (c->stage_in) DTMPI_TRY(copy_in(c->in, true));
  if (c->stage_out) DTMPI_TRY(copy_in(c->out, read_result || !c->out.contiguous));
  dtmpi::Status called =
      DTMPI_MPI_FORWARD(call(c->stage_in ? c->in.mpi_ptr() : sb, c->stage_out ? c->out.mpi_ptr() : rb, req));
  return complete(std::move(c), req, std::move(called));
}

// A reduction among ranks: run_reduction_here, or where a blocking one must
// not block inside the system MPI (dtmpi's windows need this rank's progress:
// p2p_route.hpp), its non-blocking form and dtmpi's wait.
template <class Call>
dtmpi::Status run_reduction(MPI_Comm comm, bool device_taken, const void* sb, int in_count, void* rb, int out_count,
                            bool read_result, MPI_Datatype type, MPI_Request* req, Call call) {
  if (req || !collective_needs_progress(comm))
    return run_reduction_here(device_taken, sb, in_count, rb, out_count, read_result, type, req, call);
  MPI_Request r = MPI_REQUEST_NULL;
  DTMPI_TRY(run_reduction_here(device_taken, sb, in_count, rb, out_count, read_result, type, &r, call));
  return wait(&r, MPI_STATUS_IGNORE);
}

// A reduction's device buffers go on as they are only to a CUDA-aware system
// MPI, and only where neither dtmpi's algorithms (DTMPI_COLL) nor its
// deterministic fold (which combines with the CPU) may take the call -- the
// same answer on every rank of `comm`.
bool reduction_takes_device_memory(dtmpi::coll::CollOpKind op, MPI_Comm comm) {
  return collective_takes_device_memory(op) && !dtmpi::coll::deterministic(comm);
}

bool is_inter(MPI_Comm comm) {
  int inter = 0;
  REAL(MPI_Comm_test_inter)(comm, &inter);
  return inter != 0;
}

dtmpi::Status allreduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        MPI_Request* req) {
  tp::poll();
  return run_reduction(comm, reduction_takes_device_memory(dtmpi::coll::CollOpKind::kAllreduce, comm), sb, count, rb, count,
                       sb == MPI_IN_PLACE, type, req, [&](const void* s, void* r, MPI_Request* q) {
                         // a deterministic fold where the communicator asks for one,
                         // else dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                         auto served = dtmpi::coll::deterministic(comm)
                                           ? dtmpi::coll::deterministic_reduce(s, r, count, type, op, -1, comm, q)
                                           : dtmpi::coll::allreduce(s, r, count, type, op, comm, q);
                         if (!served) return served.error().code;
                         if (served.value()) return MPI_SUCCESS;
                         return q ? REAL(MPI_Iallreduce)(s, r, count, type, op, comm, q)
                                  : REAL(MPI_Allreduce)(s, r, count, type, op, comm);
                       });
}

dtmpi::Status reduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                     MPI_Request* req) {
  tp::poll();
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  const bool inter = is_inter(comm);
  const bool result_here = inter ? root == MPI_ROOT : root == me;
  const bool contributes = inter ? root >= 0 : true;
  return run_reduction(comm, reduction_takes_device_memory(dtmpi::coll::CollOpKind::kReduce, comm),
                       contributes ? sb : nullptr, count, result_here ? rb : nullptr, count,
                       result_here && sb == MPI_IN_PLACE, type, req, [&](const void* s, void* r, MPI_Request* q) {
                         // arguments MPI ignores on this rank pass through unchanged
                         const void* a = contributes ? s : sb;
                         void* b = result_here ? r : rb;
                         if (!inter) {  // deterministic, or dtmpi's own algorithm (as above)
                           auto served = dtmpi::coll::deterministic(comm)
                                             ? dtmpi::coll::deterministic_reduce(a, b, count, type, op, root, comm, q)
                                             : dtmpi::coll::reduce(a, b, count, type, op, root, comm, q);
                           if (!served) return served.error().code;
                           if (served.value()) return MPI_SUCCESS;
                         }
                         return q ? REAL(MPI_Ireduce)(a, b, count, type, op, root, comm, q)
                                  : REAL(MPI_Reduce)(a, b, count, type, op, root, comm);
                       });
}

dtmpi::Status reduce_scatter_block(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                   MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  const bool in_place = sb == MPI_IN_PLACE;
  // in place, the result buffer holds all n blocks of input
  return run_reduction(comm, reduction_takes_device_memory(dtmpi::coll::CollOpKind::kReduceScatterBlock, comm), sb,
                       n * count, rb, in_place ? n * count : count, in_place, type, req,
                       [&](const void* s, void* r, MPI_Request* q) {
                         // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                         auto served = dtmpi::coll::reduce_scatter_block(s, r, count, type, op, comm, q);
                         if (!served) return served.error().code;
                         if (served.value()) return MPI_SUCCESS;
                         return q ? REAL(MPI_Ireduce_scatter_block)(s, r, count, type, op, comm, q)
                                  : REAL(MPI_Reduce_scatter_block)(s, r, count, type, op, comm);
                       });
}

dtmpi::Status reduce_scatter(const void* sb, void* rb, const int counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                             MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  int me = 0, total = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  for (int i = 0; i < n; ++i) total += counts[i];
  const bool in_place = sb == MPI_IN_PLACE;
  return run_reduction(comm, reduction_takes_device_memory(dtmpi::coll::CollOpKind::kReduceScatter, comm), sb, total, rb,
                       in_place ? total : counts[me], in_place, type, req,
                       [&](const void* s, void* r, MPI_Request* q) {
                         // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                         auto served = dtmpi::coll::reduce_scatter(s, r, counts, type, op, comm, q);
                         if (!served) return served.error().code;
                         if (served.value()) return MPI_SUCCESS;
                         return q ? REAL(MPI_Ireduce_scatter)(s, r, counts, type, op, comm, q)
                                  : REAL(MPI_Reduce_scatter)(s, r, counts, type, op, comm);
                       });
}

// Prefix reductions; MPI_Exscan leaves rank 0's result buffer as it is, so
// its bytes are read in first.
dtmpi::Status scan(bool exclusive, const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* req) {
  tp::poll();
  return run_reduction(
      comm, reduction_takes_device_memory(exclusive ? dtmpi::coll::CollOpKind::kExscan : dtmpi::coll::CollOpKind::kScan, comm),
      sb, count, rb, count, exclusive || sb == MPI_IN_PLACE, type, req,
                       [&](const void* s, void* r, MPI_Request* q) {
                         // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                         auto served = dtmpi::coll::scan(exclusive, s, r, count, type, op, comm, q);
                         if (!served) return served.error().code;
                         if (served.value()) return MPI_SUCCESS;
                         if (exclusive)
                           return q ? REAL(MPI_Iexscan)(s, r, count, type, op, comm, q)
                                    : REAL(MPI_Exscan)(s, r, count, type, op, comm);
                         return q ? REAL(MPI_Iscan)(s, r, count, type, op, comm, q)
                                  : REAL(MPI_Scan)(s, r, count, type, op, comm);
                       });
}

}  // namespace

DTMPI_EXPORT int MPI_Allreduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return result(comm, allreduce(sb, rb, count, type, op, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iallreduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                MPI_Request* req) {
  return result(comm, allreduce(sb, rb, count, type, op, comm, req));
}
DTMPI_EXPORT int MPI_Reduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root,
                            MPI_Comm comm) {
  return result(comm, reduce(sb, rb, count, type, op, root, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ireduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root,
                             MPI_Comm comm, MPI_Request* req) {
  return result(comm, reduce(sb, rb, count, type, op, root, comm, req));
}
DTMPI_EXPORT int MPI_Reduce_scatter_block(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op,
                                          MPI_Comm comm) {
  return result(comm, reduce_scatter_block(sb, rb, count, type, op, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ireduce_scatter_block(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op,
                                           MPI_Comm comm, MPI_Request* req) {
  return result(comm, reduce_scatter_block(sb, rb, count, type, op, comm, req));
}
DTMPI_EXPORT int MPI_Reduce_scatter(const void* sb, void* rb, const int counts[], MPI_Datatype type, MPI_Op op,
                                    MPI_Comm comm) {
  return result(comm, reduce_scatter(sb, rb, counts, type, op, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ireduce_scatter(const void* sb, void* rb, const int counts[], MPI_Datatype type, MPI_Op op,
                                     MPI_Comm comm, MPI_Request* req) {
  return result(comm, reduce_scatter(sb, rb, counts, type, op, comm, req));
}
DTMPI_EXPORT int MPI_Scan(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return result(comm, scan(false, sb, rb, count, type, op, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iscan(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                           MPI_Request* req) {
  return result(comm, scan(false, sb, rb, count, type, op, comm, req));
}
DTMPI_EXPORT int MPI_Exscan(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return result(comm, scan(true, sb, rb, count, type, op, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iexscan(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                             MPI_Request* req) {
  return result(comm, scan(true, sb, rb, count, type, op, comm, req));
}
// No communicator: errors go to MPI_COMM_WORLD's handler (MPI-3.1 sec. 8.3).
DTMPI_EXPORT int MPI_Reduce_local(const void* in, void* inout, int count, MPI_Datatype type, MPI_Op op) {
  return result(run_reduction_here(tp::mpi_takes_device_memory(), in, count, inout, count, true, type, nullptr,
                                   [&](const void* s, void* r, MPI_Request*) {
    return REAL(MPI_Reduce_local)(s, r, count, type, op);
  }));
}
