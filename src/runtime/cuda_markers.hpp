// What a GpuMarker (runtime/markers.hpp) is, for the CUDA code that records
// one itself (transport/batched_sends.cpp); CUDA builds only.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "base/result.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/markers.hpp"

namespace dtmpi::runtime {

// A completion marker: a pooled event recorded after the work, and, where the
// marker is watched on a critical path, a host flag raised after it too
// (polling cudaEventQuery costs over a microsecond a call; the flag is a
// load). `pending`: handed out for held-back work not yet queued (the batched
// packs, transport/batched_sends.cpp), not done until that work records it.
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
// A marker recorded on `s` (host flag too where `host_visible`).
Result<GpuMarker> record_marker(cudaStream_t s, int device, bool host_visible);

}  // namespace dtmpi::runtime
