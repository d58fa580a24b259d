// Packs and unpacks queued on dtmpi's streams (runtime/stream_pack.hpp),
// CUDA builds: what pack/gpu_dispatch.hpp queues, and a marker after it.
#include "runtime/stream_pack.hpp"

#include <cuda_runtime.h>

#include "base/trace.hpp"
#include "pack/gpu_dispatch.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/cuda_markers.hpp"

namespace dtmpi::runtime {

Status pack_to_device_async(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                            void* dst, type::PackedRange range) {
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device);
  if (!s) return s.error();
  DTMPI_TRACE("gpu: pack launching");
  return pack::queue_pack_range(plan, count, user, dst, ui.device, s.value(), range);
}

Result<DeviceBuffer> pack_to_device_buffer(const type::PackPlan& plan, int64_t count, const void* user,
                                           const PointerInfo& ui) {
  auto dev = acquire_device_buffer(ui.device, static_cast<size_t>(count * plan.size));
  if (!dev) return dev.error();
  auto ok = pack_to_device_async(plan, count, user, ui, dev.value().ptr);
  if (ok) ok = wait_stream(ui.device);
  if (!ok) {
    release_device_buffer(dev.value());
    return ok.error();
  }
  return dev;
}

Result<GpuMarker> unpack_async(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                               const PointerInfo& ui, KernelGate gate, type::PackedRange range) {
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, Lane::kReceive);
  if (!s) return s.error();
  DTMPI_TRY(pack::queue_unpack_range(plan, count, packed, user, ui.device, s.value(),
                                     pack::Gate{gate.word, gate.value}, range));
  DTMPI_TRACE("gpu: unpack launched");
  return record_marker(s.value(), ui.device, true);
}

}  // namespace dtmpi::runtime
