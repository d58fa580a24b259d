// Internals of the CUDA runtime shared by its source files (gpu.cpp,
// gpu_transfer.cpp); CUDA builds only. Everything else uses runtime/gpu.hpp.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "base/cuda_check.hpp"
#include "base/result.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/gpu.hpp"

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
};
const DriverCalls& driver();

// dtmpi's own stream of `lane` on `device` (created on first use):
// non-blocking, or, with DTMPI_GPU_ORDER=legacy, a blocking stream, which the
// driver orders after work on the legacy default stream at no cost per operation.
Result<cudaStream_t> stream_for(int device, Lane lane = Lane::kTransfer);
BufferPool& device_pool(int device);
// Frees the ready counters (runtime/gpu_signal.cpp), at MPI_Finalize.
void release_ipc_signals();
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
// A completion marker (runtime/gpu.hpp's GpuMarker): a pooled event recorded
// after the work, and, where the marker is watched on a critical path, a host
// flag raised after it too (polling cudaEventQuery costs over a microsecond a
// call; the flag is a load). `pending`: handed out for a batched pack not yet
// queued (gpu_batched_sends.cpp), not done until the batch records it.
struct Marker {
  cudaEvent_t event = nullptr;
  int device = -1;
  HostFlag flag;       // seq 0: none
  uint32_t polls = 0;  // flag polls since the last event query
  bool failed = false; // the batch it waited for failed to launch
  std::atomic<bool> pending{false};
};
// A marker from the pool with an event of `device`, recorded nowhere yet.
Result<Marker*> take_marker(int device);
// Records `m` on `s` (and its host flag where `host_visible`).
Status record_into(Marker* m, cudaStream_t s, bool host_visible);
// Commits the reserved ready values first..last of `device`'s counter with
// one write of `last` on `s` (null: the transfer stream) (gpu_signal.cpp; the
// ordering rules of ipc_signal_commit).
Status commit_values(int device, uint64_t first, uint64_t last, cudaStream_t s = nullptr);
// Queues the last batched packs and stops the helper thread (gpu_batched_sends.cpp; at MPI_Finalize).
void stop_batches();
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
