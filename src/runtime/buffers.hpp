// Pooled buffers the runtime lends to operations: device buffers, and host
// staging buffers for moving GPU data through the system MPI. The header is
// CUDA-free; the pools: runtime/buffer_pool.hpp, runtime/host_pool.hpp.
#pragma once
#include <cstddef>

#include "base/result.hpp"

namespace dtmpi::runtime {

// A pooled device buffer on `device`.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t capacity = 0;
  int cls = -1;
  int device = -1;
};
Result<DeviceBuffer> acquire_device_buffer(int device, size_t bytes);
void release_device_buffer(DeviceBuffer& b);

// Host buffers for staging GPU data through the system MPI: pinned and
// mapped (GPU kernels write them directly) when a GPU is in use, plain heap
// memory otherwise (the host-memory test mode of the transfer paths). Packing
// into them: transport/staging.hpp.
struct Staging {
  void* ptr = nullptr;
  size_t capacity = 0;
  int cls = -1;
  bool pinned = false;
};
Result<Staging> acquire_staging(size_t bytes);
void release_staging(Staging& s);

}  // namespace dtmpi::runtime
