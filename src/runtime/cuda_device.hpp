// The CUDA side of the device context (runtime/device.cpp), for the CUDA
// source files of runtime and transport: driver entry points, dtmpi's streams
// and the waits for them, the pools, the current-device scope. CUDA builds
// only; CUDA-free code uses runtime/device.hpp, streams.hpp and buffers.hpp.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "base/cuda_check.hpp"
#include "base/result.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/streams.hpp"

namespace dtmpi::runtime {

// Devices dtmpi keeps per-device state for (streams, pools, flags, counters).
inline constexpr int kMaxDevices = 64;

// Driver entry points, looked up at run time (a link-time dependency on
// libcuda would stop the library loading on machines without a driver); null
// where the driver lacks them.
struct DriverCalls {
  decltype(&cuPointerGetAttributes) pointer_get_attributes = nullptr;
  decltype(&cuPointerGetAttribute) pointer_get_attribute = nullptr;
  CUresult (*write_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int) = nullptr;
  CUresult (*write_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int) = nullptr;
  CUresult (*wait_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*primary_ctx_get_state)(CUdevice, unsigned int*, int*) = nullptr;
  // runtime/peer_bandwidth.cpp: a measurement on GPUs the CUDA runtime may
  // never have used, through contexts it retains and releases itself
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_push)(CUcontext) = nullptr;
  CUresult (*ctx_pop)(CUcontext*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned int) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*memcpy_peer_async)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream) = nullptr;
  CUresult (*can_access_peer)(int*, CUdevice, CUdevice) = nullptr;
  CUresult (*ctx_enable_peer_access)(CUcontext, unsigned int) = nullptr;
  CUresult (*ctx_disable_peer_access)(CUcontext) = nullptr;
};
const DriverCalls& driver();

// dtmpi's own stream of `lane` on `device` (created on first use):
// non-blocking, or, with DTMPI_GPU_ORDER=legacy, a blocking stream, which the
// driver orders after work on the legacy default stream at no cost per operation.
Result<cudaStream_t> stream_for(int device, Lane lane = Lane::kTransfer);
BufferPool& device_pool(int device);
BufferPool& pinned_pool();
// Host-visible progress of dtmpi's stream `s` on `device`: queues a stream
// write of the stream's next sequence number to a mapped pinned word of its
// own and returns the number (seq 0 where stream memory operations are
// unavailable). Numbers are taken and their writes queued under one lock, so
// the word only grows.
struct HostFlag {
  uint32_t seq = 0;
  uint8_t lane = 0;
};
HostFlag raise_host_flag(int device, cudaStream_t s);
// True once the flag has reached `f.seq` (a load from host memory).
bool host_flag_reached(int device, HostFlag f);
// Waits for the work queued on `s` (spin on a stream-written flag, then sync).
Status finish(int device, cudaStream_t s);
// The allocation containing `p`: start, size and the driver's buffer id
// (unique per allocation for the life of the process). False if not CUDA memory.
bool allocation_of(const void* p, uintptr_t& start, size_t& size, unsigned long long& id);

// Makes `device` current for the scope, restoring the application's choice.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device >= 0 && DTMPI_CUDA_WARN(cudaGetDevice(&prev_)) && prev_ != device &&
        DTMPI_CUDA_WARN(cudaSetDevice(device)))
      restore_ = true;
  }
  ~DeviceScope() {
    if (restore_) DTMPI_CUDA_WARN(cudaSetDevice(prev_));
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0;
  bool restore_ = false;
};

}  // namespace dtmpi::runtime
