// What the GPU rows share (scope_gpu.cpp): the buffers, the two timing
// methods of the thesis (CUDA events around one stream's work; the busy-wait
// start for two directions at once), filling and checking the bytes moved,
// cache flushing, peer access. CUDA builds only.
#pragma once
#include <cuda_runtime_api.h>

#include <functional>
#include <string>

#include "base/cuda_check.hpp"
#include "scope.hpp"
#include "scope_pattern.hpp"

namespace dtmpi::scope::gpu {

enum class Mem { kPageable, kPinned, kDevice, kManaged };

// Buffer `index` (0..3) of a kind: device memory of GPU `where`; host memory
// on NUMA node `where` (-1: wherever the OS puts it; pinned buffers are
// mapped and portable); managed memory (`where` ignored). Every buffer holds
// capacity() bytes, allocated at first use and kept (one NUMA node's host
// buffers at a time).
Result<char*> buffer(Mem mem, int where, int index);
size_t capacity();
void release_buffers();

// A stream on a device and the events that time its work.
struct Lane {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};
Result<Lane*> lane(int device);
// The time of `op` (which queues its work on lane.stream) between two events.
Result<double> time_events(Lane& l, const std::function<Status()>& op);

// Two streams (on devices d1 and d2) for both directions at once.
struct Duplex {
  int d1 = 0, d2 = 0;
  cudaStream_t s1 = nullptr, s2 = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr, end1 = nullptr;  // on d1
  cudaEvent_t done = nullptr, end2 = nullptr;                   // on d2
  uint64_t wait_ns = 50000;                                     // the busy-wait, lengthened as needed
};
Result<Duplex*> duplex(int d1, int d2);
struct DuplexTime {
  double seconds = 0;
  double skew = -1;  // |t1 - t2| / the longer, where both ran on one device (else -1)
  int restarts = 0;  // busy-waits that ended before the CPU had queued everything
};
// The thesis's bidirectional method (Fig. 3.4): a busy-wait kernel on s1,
// event `start` after it, s2 waits for `start`; op1 on s1 and op2 on s2;
// `done` on s2, s1 waits for it, `stop` on s1; time = start..stop. If `start`
// has already fired once everything is queued, the wait was too short: it
// is doubled and the measurement repeated.
Result<DuplexTime> time_duplex(Duplex& d, const std::function<Status(cudaStream_t)>& op1,
                               const std::function<Status(cudaStream_t)>& op2);

// The test pattern over `span` bytes of p (a kernel on `device` for device
// and managed memory, the CPU for host memory), and the check of `bytes`
// useful bytes of dst (laid out as `dl`) against a source laid out as `sl`:
// every byte up to 1 MiB, else 16 windows of 4 KiB and the last bytes.
Status fill(void* p, Mem mem, int device, size_t span, uint32_t seed);
Status check(const void* dst, Mem mem, const Layout& dl, const Layout& sl, size_t bytes, uint32_t seed,
             const std::string& what);
// Flushes host buffers before a timed transfer (unless --no-flush, or larger than kFlushMax).
void flush(const void* p, Mem mem, size_t bytes);
// Peer access between GPUs a and b, both ways, on or off.
Status set_peer_access(int a, int b, bool on);

inline std::string place(int a) { return "gpu" + std::to_string(a); }
// (b < 0: no second GPU; its rows are named for GPU a + 1 and skipped)
inline std::string place(int a, int b) { return place(a) + "-" + place(b < 0 ? a + 1 : b); }
// A seed per row and size, so no row can pass on another's bytes.
uint32_t seed_of(const std::string& row, int64_t bytes);

// The events-timed iteration loop of a transfer: before each iteration
// `prepare` (untimed: cache flushes, resetting where managed pages live), then
// `op` timed by events on `l`. Fill before, check after: the caller's.
Status event_loop(benchmark::State& state, Lane& l, const std::function<Status()>& prepare,
                  const std::function<Status()>& op);
// The same for both directions at once (time_duplex); counters "skew" and "restarts".
Status duplex_loop(benchmark::State& state, Duplex& d, const std::function<Status()>& prepare,
                   const std::function<Status(cudaStream_t)>& op1, const std::function<Status(cudaStream_t)>& op2);
// Wall-clock iterations (synchronous work, and the naive rows).
Status wall_loop(benchmark::State& state, const std::function<Status()>& prepare, const std::function<Status()>& op);

// CUDA 12 and 13 spell the managed-memory prefetch differently.
cudaError_t prefetch(const void* p, size_t bytes, int device /* cudaCpuDeviceId: the host */, cudaStream_t s);

// Registration of the GPU rows, by file.
void register_explicit_rows();  // scope_explicit.cpp
void register_implicit_rows();  // scope_implicit.cpp
void register_strided_rows();   // scope_strided.cpp
void register_cost_rows();      // scope_cost.cpp

}  // namespace dtmpi::scope::gpu
