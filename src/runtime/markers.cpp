// Markers (runtime/markers.hpp, runtime/cuda_markers.hpp), CUDA builds:
// pooled events, recorded on dtmpi's streams, with a host flag where watched.
#include "runtime/markers.hpp"

#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/cuda_markers.hpp"

namespace dtmpi::runtime {

namespace {

std::mutex g_markers_mu;
std::vector<Marker*> g_free_markers;

}  // namespace

Result<Marker*> take_marker(int device) {
  Marker* m = nullptr;
  {
    std::lock_guard lock(g_markers_mu);
    if (!g_free_markers.empty()) {
      m = g_free_markers.back();
      g_free_markers.pop_back();
    }
  }
  if (!m) m = new Marker;
  // an event records only on a stream of the device it was created on
  if (m->event && m->device != device) {
    cudaEventDestroy(m->event);
    m->event = nullptr;
  }
  if (!m->event) {
    if (Status created = DTMPI_CUDA_STATUS(cudaEventCreateWithFlags(&m->event, cudaEventDisableTiming)); !created) {
      m->event = nullptr;
      delete m;
      return created.error();
    }
  }
  m->device = device;
  m->polls = 0;
  m->flag = HostFlag{};
  m->failed = false;
  m->pending.store(false, std::memory_order_relaxed);
  return m;
}

Status record_into(Marker* m, cudaStream_t s, bool host_visible) {
  DTMPI_CUDA_CHECK(cudaEventRecord(m->event, s));
  DTMPI_TRACE("gpu: marker event recorded");
  m->flag = host_visible ? raise_host_flag(m->device, s) : HostFlag{};
  return ok_status();
}

Result<GpuMarker> record_marker(cudaStream_t s, int device, bool host_visible) {
  auto m = take_marker(device);
  if (!m) return m.error();
  if (auto ok = record_into(m.value(), s, host_visible); !ok) {
    std::lock_guard lock(g_markers_mu);
    g_free_markers.push_back(m.value());
    return ok.error();
  }
  return static_cast<GpuMarker>(m.value());
}

Result<GpuMarker> copy_async(void* dst, const void* src, size_t bytes, int device) {
  DeviceScope scope(device);
  auto s = stream_for(device);
  if (!s) return s.error();
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.value()));
  return record_marker(s.value(), device, false);
}

Result<bool> marker_done(GpuMarker gm) {
  auto* m = static_cast<Marker*>(gm);
  if (m->pending.load(std::memory_order_acquire)) return false;  // its batched pack is not queued yet
  if (m->failed) return Error{kErrCuda, "a batched pack failed to launch"};
  // the flag first; the event now and then, which also reports a fault (after
  // one, the flag would never be written)
  if (m->flag.seq && host_flag_reached(m->device, m->flag)) return true;
  if (m->flag.seq && (++m->polls & 63) != 0) return false;
  const cudaError_t e = cudaEventQuery(m->event);
  if (e == cudaErrorNotReady) return false;  // an answer, not a failure
  if (Status done = cuda_status(e, "cudaEventQuery"); !done) return done.error();
  return true;
}

Result<GpuMarker> mark(int device) {
  DeviceScope scope(device);
  auto s = stream_for(device);
  if (!s) return s.error();
  return record_marker(s.value(), device, true);
}

Status wait_marker(GpuMarker m) {
  if (static_cast<Marker*>(m)->pending.load(std::memory_order_acquire))
    DTMPI_TRY(queue_held_work(static_cast<Marker*>(m)->device));
  for (;;) {
    auto done = marker_done(m);
    if (!done) return done.error();
    if (done.value()) return ok_status();
  }
}

void release_marker(GpuMarker m) {
  if (!m) return;
  // a batched pack still to be queued records into it: queue it first
  if (static_cast<Marker*>(m)->pending.load(std::memory_order_acquire) &&
      !queue_held_work(static_cast<Marker*>(m)->device))
    DTMPI_LOG(kError, "queuing batched packs failed");
  std::lock_guard lock(g_markers_mu);
  g_free_markers.push_back(static_cast<Marker*>(m));
}

}  // namespace dtmpi::runtime
