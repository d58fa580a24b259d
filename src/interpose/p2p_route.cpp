#include "interpose/p2p_route.hpp"

#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "runtime/buffer_hint.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/system_info.hpp"
#include "transport/peers.hpp"
#include "type/introspect.hpp"
#include "type/registry.hpp"

namespace dtmpi::interpose {

namespace rt = dtmpi::runtime;

namespace {

// Host data with a non-contiguous layout of small blocks: dtmpi's CPU packer
// and one message of bytes beat the system MPIs' datatype engines.
bool host_packs_better(const type::PackPlan& plan, int count) {
  int64_t offset = 0;
  return rt::config().host_staging && int64_t{count} * plan.size <= transport::kHostPackMaxBytes &&
         !plan.contiguous_for_count(count, offset) && transport::typical_block(plan) <= rt::config().host_staging_max_block;
}

}  // namespace

bool may_stage(MPI_Datatype type, HostPacking host) {
  if (!rt::active()) return false;
  if (rt::gpu_enabled()) return true;  // depends on where the buffer lives
  // host memory only: derived types (plans), if any host rule applies
  return (rt::test_hooks().stage_host || (host == HostPacking::kWhereBetter && rt::config().host_staging)) &&
         type::find_plan(type) != nullptr;
}

bool must_stage(const void* buf, int count, MPI_Datatype type, transport::UserBuffer& b, HostPacking host,
                const Asked* asked, bool device_taken) {
  if (!rt::active() || count <= 0) return false;
  // one look at the type memo per call: the fast path's where it looked
  const type::Memo memo = asked ? asked->memo : type::memo(type);
  const type::PackPlan* known = memo.plan;
  // MPI_BOTTOM (a null address in every MPI) with a derived type: the
  // type's absolute displacements say where the data lives
  if (buf == nullptr && !known) return false;
  // inlined: loads and compares for host memory the layout proves, whether
  // or not GPUs are in use (issue 29); plain_host classified the same
  // address (no plan: the buffer's start) where it got that far
  b.info = asked && asked->classified
               ? asked->info
               : rt::buffer_info(static_cast<const char*>(buf) + (known ? known->first_byte : 0), type);
  if (buf == nullptr && !rt::on_gpu(b.info)) return false;  // host data at MPI_BOTTOM: the system MPI's
  if (!known && !rt::on_gpu(b.info)) {
    // a predefined type's size, learned once: plain_host decides next time
    if (memo.named_size == -2) (void)type::size_fast_slow(type);
    return false;
  }
  if (!rt::on_gpu(b.info)) {
    // host memory: derived types dtmpi packs better (or any, in the host test mode)
    const bool better = host == HostPacking::kWhereBetter && known && host_packs_better(*known, count);
    if (!known || (!rt::test_hooks().stage_host && !better)) return false;
  }
  b.plan = type::plan_for(type);
  if (!b.plan) {
    if (rt::on_gpu(b.info) && !device_taken) b.refused = MPI_ERR_TYPE;
    return false;
  }
  if (rt::on_gpu(b.info) && device_taken) {
    int64_t offset = 0;
    if (b.plan->contiguous_for_count(count, offset))
      return false;  // contiguous device data: the CUDA-aware system MPI takes it as it is
  }
  b.ptr = const_cast<void*>(buf);
  b.count = count;
  b.type = type;
  b.bytes = int64_t{count} * b.plan->size;
  if (b.bytes <= INT32_MAX) return true;
  if (rt::on_gpu(b.info) && !device_taken) b.refused = MPI_ERR_COUNT;
  return false;
}

Error refusal(const transport::UserBuffer& b) {
  return Error{b.refused, b.refused == MPI_ERR_COUNT
                              ? "a GPU buffer of more than 2 GiB of packed bytes: the system MPI is not CUDA-aware "
                                "and dtmpi moves at most 2 GiB in one call (MPI_ERR_COUNT)"
                              : "a GPU buffer whose datatype dtmpi cannot plan: the system MPI is not CUDA-aware "
                                "(MPI_ERR_TYPE)"};
}

HostPacking receive_packing() {
  return rt::host_receive_direct() ? HostPacking::kNever : HostPacking::kWhereBetter;
}

bool route_receive(void* buf, int count, MPI_Datatype type, RecvRoute& r, int64_t multi_min, const Asked* asked) {
  // Host buffers are staged here only where receive_packing() says so: else
  // the system MPI unpacks the sender's packed bytes (MPI_PACKED matches any
  // type, MPI-4.1 sec. 3.3.1) in the copy it makes anyway, one copy fewer
  // (bench/results/halo-cpu-host-recv-2026-11-23.txt). The host test mode
  // always stages, to run the staged protocol without GPUs.
  Asked own{};
  if (!asked) {
    if (plain_host(buf, count, type, multi_min, own)) return false;  // below any descriptor's size
    asked = &own;
  }
  if (must_stage(buf, count, type, r.buffer, receive_packing(), asked)) {
    r.staged = true;
    r.multi = r.buffer.bytes >= multi_min && transport::descriptors_possible();
    return true;
  }
  if (r.buffer.refused) return false;  // GPU memory nobody can take: the caller refuses the call
  // a host buffer: it only needs us if a peer may send a descriptor into it
  if (!rt::active() || !transport::descriptors_possible() || count <= 0 || buf == nullptr) return false;
  // the size from the memo this call read (must_stage may have just learned
  // a predefined type's size that the memo did not know yet: asked then)
  int64_t size = asked->memo.plan ? asked->memo.plan->size : asked->memo.named_size;
  if (size < 0) {
    auto s = type::size_fast(type);  // 64 bits: a large-count type may pass 2^31 bytes
    if (!s) return false;
    size = s.value();
  }
  if (int64_t{count} * size < multi_min || int64_t{count} * size > INT32_MAX) return false;
  r.buffer.ptr = buf;
  r.buffer.count = count;
  r.buffer.type = type;
  r.buffer.bytes = int64_t{count} * size;
  r.buffer.plan = type::plan_for(type);  // null: the system MPI packs and unpacks
  r.staged = false;
  r.multi = true;
  return true;
}

bool describe_receive(void* buf, int count, MPI_Datatype type, transport::UserBuffer& b) {
  if (must_stage(buf, count, type, b)) return true;
  if (b.refused) return false;
  if (count < 0) return false;
  auto size = type::size_of(type);
  if (!size) return false;
  b.ptr = buf;
  b.count = count;
  b.type = type;
  b.bytes = int64_t{count} * size.value();
  b.plan = type::plan_for(type);
  b.info = rt::PointerInfo{};
  if (b.plan && rt::gpu_enabled() && buf)
    b.info = rt::buffer_info(static_cast<const char*>(buf) + b.plan->first_byte, type);
  return !rt::on_gpu(b.info) || b.plan;
}

Status recv_stashed(void* buf, int count, MPI_Datatype type, MPI_Comm comm, transport::Stashed& e, MPI_Status* status,
                    MPI_Request* request) {
  transport::UserBuffer b;
  if (!describe_receive(buf, count, type, b)) return Error{MPI_ERR_TYPE, ""};
  return transport::receive_stashed(b, comm, e, status, request);
}

}  // namespace dtmpi::interpose
