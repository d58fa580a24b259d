// runtime/buffers.hpp in CUDA builds: device buffers from the device pools,
// staging buffers from the pinned pool (the host pool without a GPU).
#include "runtime/buffers.hpp"

#include <mpi.h>

#include "runtime/cuda_device.hpp"
#include "runtime/device.hpp"
#include "runtime/host_pool.hpp"
#include "runtime/stats.hpp"

namespace dtmpi::runtime {

Result<DeviceBuffer> acquire_device_buffer(int device, size_t bytes) {
  DeviceScope scope(device);
  auto b = device_pool(device).acquire(bytes ? bytes : 1);
  if (!b) return b.error();
  return DeviceBuffer{b.value().ptr, b.value().capacity, b.value().cls, device};
}

void release_device_buffer(DeviceBuffer& b) {
  if (!b.ptr) return;
  device_pool(b.device).release(PooledBuffer{b.ptr, b.capacity, b.cls});
  b.ptr = nullptr;
}

Result<Staging> acquire_staging(size_t bytes) {
  count(Counter::kStagingAcquired);
  Staging s;
  if (!gpu_enabled()) {
    const HostBuffer h = host_pool_acquire(bytes);
    if (!h.ptr) return Error{MPI_ERR_NO_MEM, "staging buffer"};
    s.ptr = h.ptr;
    s.capacity = h.capacity;
    s.cls = h.cls;
    return s;
  }
  auto b = pinned_pool().acquire(bytes ? bytes : 1);
  if (!b) return b.error();
  s.ptr = b.value().ptr;
  s.capacity = b.value().capacity;
  s.cls = b.value().cls;
  s.pinned = true;
  return s;
}

void release_staging(Staging& s) {
  if (!s.ptr) return;
  count(Counter::kStagingReleased);
  if (s.pinned)
    pinned_pool().release(PooledBuffer{s.ptr, s.capacity, s.cls});
  else
    host_pool_release(HostBuffer{s.ptr, s.capacity, s.cls});
  s.ptr = nullptr;
}

}  // namespace dtmpi::runtime
