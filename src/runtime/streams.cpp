// runtime/streams.hpp in CUDA builds (the streams themselves and finish():
// runtime/device.cpp).
#include "runtime/streams.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <cstring>

#include "base/cuda_check.hpp"
#include "runtime/cuda_device.hpp"

namespace dtmpi::runtime {
namespace {

std::atomic<QueueHeldWork> g_held_work{nullptr};

}  // namespace

void set_held_work_queue(QueueHeldWork queue) { g_held_work.store(queue, std::memory_order_release); }

Status queue_held_work(int device) {
  const QueueHeldWork queue = g_held_work.load(std::memory_order_acquire);
  return queue ? queue(device) : ok_status();
}

Status copy_bytes(void* dst, const void* src, size_t bytes, int device) {
  if (bytes == 0) return ok_status();
  if (device < 0) {
    std::memcpy(dst, src, bytes);
    return ok_status();
  }
  DeviceScope scope(device);
  auto s = stream_for(device, Lane::kSync);
  if (!s) return s.error();
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.value()));
  return finish(device, s.value());
}

Status wait_stream(int device, Lane lane) {
  if (lane == Lane::kTransfer) DTMPI_TRY(queue_held_work(device));  // what waits for the stream waits for those too
  DeviceScope scope(device);
  auto s = stream_for(device, lane);
  if (!s) return s.error();
  return finish(device, s.value());
}

}  // namespace dtmpi::runtime
