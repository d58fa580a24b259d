// Synchronous GPU pack and unpack (runtime/device_pack.hpp), CUDA builds:
// what pack/gpu_dispatch.hpp queues, with pooled buffers in between where the
// GPU cannot reach a buffer, on dtmpi's stream of the call's lane, waited for.
#include "runtime/device_pack.hpp"

#include <cuda_runtime.h>

#include "base/cuda_check.hpp"
#include "pack/cpu_pack.hpp"
#include "pack/gpu_dispatch.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/config.hpp"
#include "runtime/cuda_device.hpp"

namespace dtmpi::runtime {

Status gpu_pack(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                void* packed, const PointerInfo& pi, Lane lane) {
  const int64_t bytes = count * plan.size;
  if (!on_gpu(ui)) {  // host data into a device buffer: CPU pack into pinned, then copy
    DeviceScope scope(pi.device);
    auto s = stream_for(pi.device, lane);
    if (!s) return s.error();
    auto staging = pinned_pool().acquire(static_cast<size_t>(bytes));
    if (!staging) return staging.error();
    PoolLease lease(pinned_pool(), staging.value());
    pack::pack_host(plan, count, user, lease.get());
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, lease.get(), static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s.value()));
    DTMPI_TRY(finish(pi.device, s.value()));
    return ok_status();
  }
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, lane);
  if (!s) return s.error();
  auto direct = pack::queue_pack_direct(plan, count, user, ui, packed, pi, s.value());
  if (!direct) return direct.error();
  if (direct.value()) {
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  // pageable host destination: pack on the device, then one copy
  auto tmp = device_pool(ui.device).acquire(static_cast<size_t>(bytes));
  if (!tmp) return tmp.error();
  PoolLease lease(device_pool(ui.device), tmp.value());
  DTMPI_TRY(pack::pack_device(plan, count, user, lease.get(), ui.device, s.value()));
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, lease.get(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s.value()));
  DTMPI_TRY(finish(ui.device, s.value()));
  return ok_status();
}

Status gpu_copy_layout(const type::PackPlan& src_plan, int64_t src_count, const void* src,
                       const type::PackPlan& dst_plan, int64_t dst_count, void* dst, int64_t bytes, int device) {
  DeviceScope scope(device);
  auto s = stream_for(device, Lane::kSync);
  if (!s) return s.error();
  DTMPI_TRY(pack::copy_layout_device(src_plan, src_count, src, dst_plan, dst_count, dst, bytes, device, s.value()));
  return finish(device, s.value());
}

Status gpu_unpack(const type::PackPlan& plan, int64_t count, const void* packed, const PointerInfo& pi,
                  void* user, const PointerInfo& ui, Lane lane) {
  const int64_t bytes = count * plan.size;
  if (!on_gpu(ui)) {  // device bytes into host data: copy to pinned, then CPU unpack
    DeviceScope scope(pi.device);
    auto s = stream_for(pi.device, lane);
    if (!s) return s.error();
    auto staging = pinned_pool().acquire(static_cast<size_t>(bytes));
    if (!staging) return staging.error();
    PoolLease lease(pinned_pool(), staging.value());
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(lease.get(), packed, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s.value()));
    DTMPI_TRY(finish(pi.device, s.value()));
    pack::unpack_host(plan, count, lease.get(), user);
    return ok_status();
  }
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, lane);
  if (!s) return s.error();
  auto direct = pack::queue_unpack_direct(plan, count, packed, pi, user, ui, s.value());
  if (!direct) return direct.error();
  if (direct.value()) {
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  // pageable host source: one copy to a device buffer, then unpack on the device
  auto tmp = device_pool(ui.device).acquire(static_cast<size_t>(bytes));
  if (!tmp) return tmp.error();
  PoolLease lease(device_pool(ui.device), tmp.value());
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(lease.get(), packed, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s.value()));
  DTMPI_TRY(pack::unpack_device(plan, count, lease.get(), user, ui.device, s.value()));
  DTMPI_TRY(finish(ui.device, s.value()));
  return ok_status();
}

bool may_queue_pack(const PointerInfo& a, const PointerInfo& b) {
  return config().pack_async && config().gpu_order_legacy && a.kind == MemKind::kDevice &&
         b.kind == MemKind::kDevice && a.device == b.device;
}

// The kernel (or, for a contiguous layout, the copy) on the legacy default
// stream of the buffers' device, not waited for: errors of the launch are
// reported here, faults of the kernel by the next call that synchronizes.
Status gpu_pack_queued(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                       void* packed) {
  DeviceScope scope(ui.device);
  return pack::queue_device_to_device(true, plan, count, const_cast<void*>(user), packed, ui.device,
                                      cudaStreamLegacy);
}

Status gpu_unpack_queued(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                         const PointerInfo& ui) {
  DeviceScope scope(ui.device);
  return pack::queue_device_to_device(false, plan, count, user, const_cast<void*>(packed), ui.device,
                                      cudaStreamLegacy);
}

}  // namespace dtmpi::runtime
