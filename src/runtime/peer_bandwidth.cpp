// runtime/peer_bandwidth.hpp with the CUDA driver's entry points
// (runtime/cuda_device.hpp): the CUDA runtime would make every GPU it touches
// current and keep its primary context (hundreds of MiB of the GPU) until the
// process ends; a retain / release pair of our own gives it back.
#include "runtime/peer_bandwidth.hpp"

#include <cuda.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "base/cuda_check.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/device.hpp"

namespace dtmpi::runtime {
namespace {

constexpr size_t kBytes = size_t{64} << 20;  // ~0.2 ms over NVLink: launch costs do not count
constexpr int kTimed = 3;                     // after one warm-up copy

// One GPU's part: its retained primary context, a source and a destination
// buffer, a stream. Released in reverse, whatever happened.
struct Side {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr buf = 0;  // 2 x kBytes: source half, destination half
  CUstream stream = nullptr;
};

// Runs `f` with `ctx` current on this thread, the caller's context restored after.
template <class F>
Status in_context(const DriverCalls& d, CUcontext ctx, F&& f) {
  DTMPI_CU_CHECK(d.ctx_push(ctx));
  const Status s = f();
  CUcontext popped = nullptr;
  d.ctx_pop(&popped);
  return s;
}

bool have_calls(const DriverCalls& d) {
  return d.device_get && d.primary_ctx_retain && d.primary_ctx_release && d.ctx_push && d.ctx_pop && d.mem_alloc &&
         d.mem_free && d.memset_d8 && d.stream_create && d.stream_destroy && d.stream_synchronize &&
         d.memcpy_peer_async && d.can_access_peer && d.ctx_enable_peer_access && d.ctx_disable_peer_access;
}

Status measure(const DriverCalls& d, std::vector<Side>& sides, std::vector<double>& gbps) {
  const size_t n = sides.size();
  for (Side& s : sides) {
    DTMPI_CU_CHECK(d.primary_ctx_retain(&s.ctx, s.dev));
    DTMPI_TRY(in_context(d, s.ctx, [&]() -> Status {
      DTMPI_CU_CHECK(d.mem_alloc(&s.buf, 2 * kBytes));
      DTMPI_CU_CHECK(d.memset_d8(s.buf, 1, 2 * kBytes));
      DTMPI_CU_CHECK(d.stream_create(&s.stream, CU_STREAM_NON_BLOCKING));
      return ok_status();
    }));
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      Side& from = sides[i];
      Side& to = sides[j];
      DTMPI_TRY(in_context(d, from.ctx, [&]() -> Status {
        // over the peer link where there is one (as CUDA IPC copies go);
        // enabled for the measurement only
        bool enabled = false;
        if (i != j && from.ctx != to.ctx) {
          int can = 0;
          DTMPI_CU_CHECK(d.can_access_peer(&can, from.dev, to.dev));
          if (can) {
            const CUresult e = d.ctx_enable_peer_access(to.ctx, 0);
            if (e == CUDA_SUCCESS) enabled = true;
            else if (e != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) DTMPI_CU_CHECK(e);
          }
        }
        auto timed = [&]() -> Status {
          double best = 0;
          for (int k = 0; k <= kTimed; ++k) {
            const auto t0 = std::chrono::steady_clock::now();
            DTMPI_CU_CHECK(d.memcpy_peer_async(to.buf + kBytes, to.ctx, from.buf, from.ctx, kBytes, from.stream));
            DTMPI_CU_CHECK(d.stream_synchronize(from.stream));
            const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (k > 0) best = std::max(best, static_cast<double>(kBytes) / sec / 1e9);
          }
          gbps[i * n + j] = best;
          return ok_status();
        };
        const Status copied = timed();
        // peer access goes back as it was, also after a failed copy
        if (enabled) DTMPI_CU_CHECK(d.ctx_disable_peer_access(to.ctx));
        return copied;
      }));
    }
  return ok_status();
}

}  // namespace

Result<std::vector<double>> measure_peer_bandwidth(const std::vector<int>& devices) {
  const DriverCalls& d = driver();
  if (!gpu_enabled() || !have_calls(d))
    return Error{MPI_ERR_OTHER, "measuring the bandwidth between GPUs needs the CUDA driver's entry points"};
  std::vector<Side> sides(devices.size());
  for (size_t i = 0; i < devices.size(); ++i)
    if (d.device_get(&sides[i].dev, devices[i]) != CUDA_SUCCESS)
      return Error{MPI_ERR_OTHER, "measuring the bandwidth between GPUs: no CUDA device " + std::to_string(devices[i])};
  std::vector<double> gbps(devices.size() * devices.size(), 0);
  const Status measured = measure(d, sides, gbps);
  // released in reverse, also after a failure; a context this process held
  // before (the CUDA runtime's) stays, one only we retained goes
  for (auto it = sides.rbegin(); it != sides.rend(); ++it) {
    if (!it->ctx) continue;
    CUcontext popped = nullptr;
    if (d.ctx_push(it->ctx) == CUDA_SUCCESS) {
      if (it->stream) d.stream_destroy(it->stream);
      if (it->buf) d.mem_free(it->buf);
      d.ctx_pop(&popped);
    }
    d.primary_ctx_release(it->dev);
  }
  if (!measured) return measured.error();
  for (double b : gbps)
    if (!(b > 0)) return Error{MPI_ERR_OTHER, "measuring the bandwidth between GPUs gave no time"};
  return gbps;
}

}  // namespace dtmpi::runtime
