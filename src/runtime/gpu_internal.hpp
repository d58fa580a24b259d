// Internals of the CUDA runtime shared by its source files (gpu.cpp,
// gpu_transfer.cpp); CUDA builds only. Everything else uses runtime/gpu.hpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "base/result.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/gpu.hpp"

namespace dtmpi::runtime {

// dtmpi's own non-blocking stream on `device` (created on first use).
Result<cudaStream_t> stream_for(int device);
BufferPool& device_pool(int device);
BufferPool& pinned_pool();
// Waits for the work queued on `s` (spin on a stream-written flag, then sync).
Status finish(int device, cudaStream_t s);
// How the GPU packers see a staging buffer (mapped unless `via_device`).
PointerInfo staging_info(const Staging& staging, bool via_device);
// The allocation containing `p`: start, size and the driver's buffer id
// (unique per allocation for the life of the process). False if not CUDA memory.
bool allocation_of(const void* p, uintptr_t& start, size_t& size, unsigned long long& id);

// Makes `device` current for the scope, restoring the application's choice.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device >= 0 && cudaGetDevice(&prev_) == cudaSuccess && prev_ != device &&
        cudaSetDevice(device) == cudaSuccess)
      restore_ = true;
  }
  ~DeviceScope() {
    if (restore_) cudaSetDevice(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0;
  bool restore_ = false;
};

}  // namespace dtmpi::runtime
