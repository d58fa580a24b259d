// Unpacking a message that ends inside an element (transport/unpack_bytes.hpp).
// Built with and without CUDA: it uses only the runtime's GPU entry points,
// which are never reached for host memory.
#include "transport/unpack_bytes.hpp"

#include <cstdint>
#include <vector>

#include "pack/cpu_pack.hpp"
#include "runtime/device_pack.hpp"
#include "runtime/markers.hpp"
#include "runtime/stream_pack.hpp"
#include "transport/staging.hpp"

namespace dtmpi::transport {

using runtime::DeviceBuffer;
using runtime::Lane;
using runtime::MemKind;
using runtime::on_gpu;
using runtime::PointerInfo;
using runtime::Staging;

namespace {

void* element(void* user, const type::PackPlan& plan, int64_t k) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(user) + static_cast<uintptr_t>(k * plan.extent));
}

// The first `rem` packed bytes of one element, at `tail` (memory `ti`), into
// the element at `elem` (memory `ui`).
Status unpack_tail(const type::PackPlan& plan, const void* tail, const PointerInfo& ti, int64_t rem, void* elem,
                   const PointerInfo& ui) {
  if (!on_gpu(ui)) {
    if (!on_gpu(ti)) {
      pack::unpack_host_prefix(plan, tail, elem, rem);
      return ok_status();
    }
    std::vector<unsigned char> host(static_cast<size_t>(rem));
    DTMPI_TRY(runtime::copy_bytes(host.data(), tail, host.size(), ti.device));
    pack::unpack_host_prefix(plan, host.data(), elem, rem);
    return ok_status();
  }
  // GPU memory: bytes [0, rem) of the element's packed stream by the GPU
  // packer, which reads device-accessible memory (a device copy of host bytes)
  DeviceBuffer copy;
  const void* from = tail;
  if (!on_gpu(ti)) {
    auto dev = runtime::acquire_device_buffer(ui.device, static_cast<size_t>(rem));
    if (!dev) return dev.error();
    copy = dev.value();
    if (auto ok = runtime::copy_bytes(copy.ptr, tail, static_cast<size_t>(rem), ui.device); !ok) {
      runtime::release_device_buffer(copy);
      return ok.error();
    }
    from = copy.ptr;
  }
  auto m = runtime::unpack_async(plan, 1, from, elem, ui, {}, type::PackedRange{0, rem});
  Status done = m ? runtime::wait_marker(m.value()) : Status(m.error());
  if (m) runtime::release_marker(m.value());
  runtime::release_device_buffer(copy);
  return done;
}

}  // namespace

Status stage_in_bytes(const type::PackPlan& plan, int64_t bytes, const Staging& staging, void* user,
                      const PointerInfo& ui, bool via_device) {
  if (plan.size <= 0 || bytes <= 0) return ok_status();
  const int64_t whole = bytes / plan.size, rem = bytes % plan.size;
  if (whole > 0) DTMPI_TRY(stage_in(plan, whole, staging, user, ui, via_device));
  if (rem == 0) return ok_status();
  return unpack_tail(plan, static_cast<const char*>(staging.ptr) + whole * plan.size, PointerInfo{}, rem,
                     element(user, plan, whole), ui);
}

Status gpu_unpack_bytes(const type::PackPlan& plan, int64_t bytes, const void* packed, const PointerInfo& pi,
                        void* user, const PointerInfo& ui, Lane lane) {
  if (plan.size <= 0 || bytes <= 0) return ok_status();
  const int64_t whole = bytes / plan.size, rem = bytes % plan.size;
  if (whole > 0) DTMPI_TRY(runtime::gpu_unpack(plan, whole, packed, pi, user, ui, lane));
  if (rem == 0) return ok_status();
  // what filled `packed` was queued on `lane` (gpu_unpack above waited for it, if it ran)
  if (whole == 0 && (on_gpu(pi) || on_gpu(ui)))
    DTMPI_TRY(runtime::wait_stream(on_gpu(ui) ? ui.device : pi.device, lane));
  PointerInfo ti = pi;
  if (ti.kind == MemKind::kPinnedHost) ti = PointerInfo{};  // the CPU reads pinned memory as it is
  return unpack_tail(plan, static_cast<const char*>(packed) + whole * plan.size, ti, rem, element(user, plan, whole),
                     ui);
}

}  // namespace dtmpi::transport
