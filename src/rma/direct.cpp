#include "rma/direct.hpp"

#include <mpi.h>

#include <cstring>

#include "base/log.hpp"
#include "rma/atomic.hpp"
#include "rma/move.hpp"
#include "base/system_mpi.hpp"
#include "runtime/stats.hpp"
#include "runtime/buffers.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/device_pack.hpp"
#include "runtime/streams.hpp"
#include "transport/peers.hpp"
#include "type/registry.hpp"

namespace dtmpi::rma {
namespace {

struct Shared {
  int32_t has_region;
  int32_t world;
  transport::IpcRegion region;
};

// The target's window memory as this process maps it, at the operation's
// displacement; null when the path does not apply.
Result<char*> mapped_target(Window& w, const TargetSide& t, int device) {
  Peer& p = w.peers[static_cast<size_t>(t.rank)];
  if (!p.has_region || !p.same_node || runtime::test_hooks().refuse_ipc) return static_cast<char*>(nullptr);
  auto m = transport::ipc_open(p.world, p.region, device, t.rank == w.rank);
  if (!m) {
    DTMPI_LOG(kDebug, "mapping rank %d's window over CUDA IPC failed (%s): its operations go as messages", t.rank,
              m.error().what.c_str());
    p.has_region = false;  // for good: a mapping that failed once is not retried per operation
    return static_cast<char*>(nullptr);
  }
  return const_cast<char*>(static_cast<const char*>(m.value())) + static_cast<int64_t>(t.disp) * p.disp_unit;
}

// Memory a kernel on `device` reads and writes in place: that GPU's device
// memory (a window mapped over IPC included: it is mapped for `device`) and
// managed memory; not another GPU's memory of this process (no peer access
// asked for), nor host memory, pinned or not.
bool kernel_reaches(const runtime::PointerInfo& i, int device) {
  return (i.kind == runtime::MemKind::kDevice && i.device == device) || i.kind == runtime::MemKind::kManaged;
}

// Moves `bytes` from (src_plan, src_count) at `src` to (dst_plan, dst_count)
// at `dst`, both in any memory, one of them GPU memory of `device`.
Status move(const type::PackPlan& src_plan, int64_t src_count, const char* src, const runtime::PointerInfo& si,
            const type::PackPlan& dst_plan, int64_t dst_count, char* dst, const runtime::PointerInfo& di,
            int64_t bytes, int device) {
  if (bytes == 0) return ok_status();
  int64_t s_off = 0, d_off = 0;
  const bool s_flat = src_plan.contiguous_for_count(src_count, s_off);
  const bool d_flat = dst_plan.contiguous_for_count(dst_count, d_off);
  if (s_flat && d_flat) return runtime::copy_bytes(dst + d_off, src + s_off, static_cast<size_t>(bytes), device);
  if (d_flat) return runtime::gpu_pack(src_plan, src_count, src, si, dst + d_off, di);
  if (s_flat) return runtime::gpu_unpack(dst_plan, dst_count, src + s_off, si, dst, di);
  // both layouts non-contiguous, both reached by this GPU's kernels: one
  // kernel from layout to layout (DTMPI_TEST_TWO_KERNEL_MOVE: the pack and
  // unpack below, to compare)
  if (kernel_reaches(si, device) && kernel_reaches(di, device) && !runtime::test_hooks().two_kernel_move) {
    runtime::count(runtime::Counter::kRmaLayoutKernels);
    return runtime::gpu_copy_layout(src_plan, src_count, src, dst_plan, dst_count, dst, bytes, device);
  }
  auto tmp = runtime::acquire_device_buffer(device, static_cast<size_t>(bytes));
  if (!tmp) return tmp.error();
  const runtime::PointerInfo ti{runtime::MemKind::kDevice, device, nullptr};
  Status st = runtime::gpu_pack(src_plan, src_count, src, si, tmp.value().ptr, ti);
  if (st) st = runtime::gpu_unpack(dst_plan, dst_count, tmp.value().ptr, ti, dst, di);
  runtime::release_device_buffer(tmp.value());
  return st;
}

// An accumulate whose operand or result buffer a kernel cannot reach (host
// memory, another GPU's): the operands packed into pinned, mapped staging
// that the kernel reads in place, the old values written into pinned staging
// and unpacked from there -- one kernel and no list of the target's element
// offsets (which cost 8 bytes per element, built on the host). False where
// no pinned staging is to be had or a layout is not whole aligned elements.
Result<bool> accumulate_through_staging(int device, const LayoutSide& target, const Side& o, const Side* result,
                                        const type::PackPlan* oplan, const type::PackPlan* rplan,
                                        const runtime::PointerInfo& oi, const runtime::PointerInfo& ri,
                                        MPI_Datatype element, int64_t n, AtomicType at, AtomicOp aop) {
  auto eplan = type::plan_for(element);
  if (!eplan) return false;
  const size_t bytes = static_cast<size_t>(n * eplan->size);
  const bool operands = aop != AtomicOp::kNoOp;
  runtime::Staging in{}, out{};
  auto release = [&] {
    if (in.ptr) runtime::release_staging(in);
    if (out.ptr) runtime::release_staging(out);
  };
  if (operands) {
    auto s = runtime::acquire_staging(bytes);
    if (!s) return s.error();
    in = s.value();
  }
  if (result) {
    auto s = runtime::acquire_staging(bytes);
    if (!s) {
      release();
      return s.error();
    }
    out = s.value();
  }
  if ((operands && !in.pinned) || (result && !out.pinned)) {
    release();
    return false;
  }
  Status st = operands ? pack_any(*oplan, o.count, o.buf, oi, in.ptr) : ok_status();
  Result<bool> done = false;
  if (st) {
    const LayoutSide origin{eplan.get(), n, in.ptr};
    const LayoutSide fetched{eplan.get(), n, out.ptr};
    done = atomic_apply_layouts(device, target, operands ? &origin : nullptr, result ? &fetched : nullptr, n, at, aop);
    if (done && done.value() && result) st = unpack_any(*rplan, result->count, out.ptr, result->buf, ri);
  }
  release();
  if (!st) return st.error();
  return done;
}

}  // namespace

Status share_regions(Window& w) {
  Shared mine{};
  int world = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &world));
  mine.world = world;
  if (w.flavor != Flavor::kDynamic && w.bytes > 0 && w.info.kind == runtime::MemKind::kDevice) {
    auto r = transport::ipc_export(w.base);
    if (r) {
      mine.has_region = 1;
      mine.region = r.value();
    } else {
      DTMPI_LOG(kDebug, "window memory not exported over CUDA IPC (%s): peers send messages", r.error().what.c_str());
    }
  }
  std::vector<Shared> all(static_cast<size_t>(w.size));
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, w.comm));
  // DTMPI_RANKS_PER_NODE emulates nodes of that many consecutive ranks: the
  // message path between them is then what other nodes would take
  const int64_t rpn = runtime::config().ranks_per_node;
  for (int i = 0; i < w.size; ++i) {
    Peer& p = w.peers[static_cast<size_t>(i)];
    const Shared& s = all[static_cast<size_t>(i)];
    p.world = s.world;
    p.same_node = i == w.rank || (rpn > 0 ? s.world / rpn == world / rpn : transport::same_node(s.world));
    p.has_region = s.has_region != 0 && runtime::gpu_enabled();
    p.region = s.region;
  }
  return ok_status();
}

Result<bool> direct_put(Window& w, const Side& o, const TargetSide& t, const type::PackPlan& oplan,
                        const type::PackPlan& tplan, int64_t bytes) {
  const int device = runtime::current_device();
  auto base = mapped_target(w, t, device);
  if (!base) return base.error();
  if (!base.value()) return false;
  const runtime::PointerInfo ti{runtime::MemKind::kDevice, device, nullptr};
  DTMPI_TRY(move(oplan, o.count, static_cast<const char*>(o.buf), runtime::pointer_info(o.buf), tplan, t.count,
                 base.value(), ti, bytes, device));
  runtime::count(runtime::Counter::kRmaOps);
  runtime::count(runtime::Counter::kRmaDirect);
  return true;
}

Result<bool> direct_get(Window& w, const Side& o, const TargetSide& t, const type::PackPlan& oplan,
                        const type::PackPlan& tplan, int64_t bytes) {
  const int device = runtime::current_device();
  auto base = mapped_target(w, t, device);
  if (!base) return base.error();
  if (!base.value()) return false;
  const runtime::PointerInfo ti{runtime::MemKind::kDevice, device, nullptr};
  DTMPI_TRY(move(tplan, t.count, base.value(), ti, oplan, o.count, static_cast<char*>(o.buf),
                 runtime::pointer_info(o.buf), bytes, device));
  runtime::count(runtime::Counter::kRmaOps);
  runtime::count(runtime::Counter::kRmaDirect);
  return true;
}

Result<bool> direct_accumulate(Window& w, const Side& o, const Side* result, const TargetSide& t, MPI_Op op,
                               MPI_Datatype element, const type::PackPlan* oplan, const type::PackPlan& tplan,
                               const type::PackPlan* rplan, int64_t bytes) {
  if (w.peers[static_cast<size_t>(t.rank)].accumulates_queued) return false;
  const AtomicType at = atomic_type(element);
  const AtomicOp aop = atomic_op(op, at);
  if (aop == AtomicOp::kNone) return false;
  const int device = runtime::current_device();
  auto base = mapped_target(w, t, device);
  if (!base) return base.error();
  if (!base.value()) return false;
  const int64_t el = (at == AtomicType::kI32 || at == AtomicType::kU32 || at == AtomicType::kF32) ? 4 : 8;
  const runtime::PointerInfo oi = aop == AtomicOp::kNoOp ? runtime::PointerInfo{} : runtime::pointer_info(o.buf);
  const runtime::PointerInfo ri = result ? runtime::pointer_info(result->buf) : runtime::PointerInfo{};
  // One kernel applies every element in the target's layout: operands and old
  // values in GPU memory it reaches are read and written in their own layouts
  // (no host copies, no offset lists); a host operand or result buffer goes
  // through pinned staging the kernel reads and writes in place.
  if (!runtime::test_hooks().two_kernel_move) {
    const LayoutSide target{&tplan, t.count, base.value()};
    const bool reached =
        (aop == AtomicOp::kNoOp || kernel_reaches(oi, device)) && (!result || kernel_reaches(ri, device));
    Result<bool> done = false;
    if (reached) {
      const LayoutSide origin{oplan, o.count, const_cast<void*>(o.buf)};
      const LayoutSide fetched{rplan, result ? result->count : 0, result ? result->buf : nullptr};
      done = atomic_apply_layouts(device, target, aop == AtomicOp::kNoOp ? nullptr : &origin,
                                  result ? &fetched : nullptr, bytes / el, at, aop);
    } else {
      done = accumulate_through_staging(device, target, o, result, oplan, rplan, oi, ri, element, bytes / el, at, aop);
    }
    if (!done) return done.error();
    if (done.value()) {
      runtime::count(runtime::Counter::kRmaOps);
      runtime::count(runtime::Counter::kRmaDirect);
      runtime::count(runtime::Counter::kRmaLayoutKernels);
      return true;
    }
  }
  std::vector<unsigned char> values;
  if (aop != AtomicOp::kNoOp) {
    values.resize(static_cast<size_t>(bytes));
    DTMPI_TRY(pack_any(*oplan, o.count, o.buf, oi, values.data()));
  }
  std::vector<int64_t> offsets;
  int64_t first = 0;
  if (!atomic_offsets(tplan, t.count, el, offsets, first))
    return Error{MPI_ERR_TYPE, "accumulate: the target datatype is not whole elements"};
  std::vector<unsigned char> old(result ? static_cast<size_t>(bytes) : 0);
  DTMPI_TRY(atomic_apply(device, base.value(), offsets.empty() ? nullptr : offsets.data(), first,
                         values.empty() ? nullptr : values.data(), nullptr, result ? old.data() : nullptr, bytes / el,
                         at, aop));
  if (result) DTMPI_TRY(unpack_any(*rplan, result->count, old.data(), result->buf, ri));
  runtime::count(runtime::Counter::kRmaOps);
  runtime::count(runtime::Counter::kRmaDirect);
  return true;
}

Result<bool> direct_compare_and_swap(Window& w, const void* origin, const void* compare, void* result,
                                     MPI_Datatype type, const TargetSide& t, const type::PackPlan& plan) {
  if (w.peers[static_cast<size_t>(t.rank)].accumulates_queued) return false;
  const AtomicType at = atomic_type(type);
  if (at == AtomicType::kNone) return false;
  const int device = runtime::current_device();
  auto base = mapped_target(w, t, device);
  if (!base) return base.error();
  if (!base.value()) return false;
  const size_t n = static_cast<size_t>(plan.size);
  std::vector<unsigned char> v(n), c(n), old(n);
  DTMPI_TRY(pack_any(plan, 1, origin, runtime::pointer_info(origin), v.data()));
  DTMPI_TRY(pack_any(plan, 1, compare, runtime::pointer_info(compare), c.data()));
  DTMPI_TRY(atomic_apply(device, base.value(), nullptr, 0, v.data(), c.data(), old.data(), 1, at, AtomicOp::kCas));
  DTMPI_TRY(unpack_any(plan, 1, old.data(), result, runtime::pointer_info(result)));
  runtime::count(runtime::Counter::kRmaOps);
  runtime::count(runtime::Counter::kRmaDirect);
  return true;
}

}  // namespace dtmpi::rma
