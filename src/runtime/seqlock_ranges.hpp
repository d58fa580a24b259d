// The address-range tables that prove host memory with loads only
// (runtime/host_ranges.hpp: MPI_Alloc_mem's ranges; runtime/mapped_host.hpp:
// the learned mappings): one seqlock shape for both. `seq` is odd while a
// writer changes the table, so a reader that saw an even `seq` before and the
// same `seq` after its loads read one consistent table (a (lo, hi) pair torn
// between two writes could otherwise span memory no entry covers).
#pragma once
#include <atomic>
#include <cstdint>

namespace dtmpi::runtime::seqlock {

// The write side, under the table's writer lock: `seq` odd around f().
template <class F>
void write(std::atomic<uint32_t>& seq, F&& f) {
  const uint32_t s = seq.load(std::memory_order_relaxed);
  seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  f();
  seq.store(s + 2, std::memory_order_release);
}

// The read side: true if `a` lies in one of the first `count` ranges
// [lo[i], hi[i]) and no writer changed the table meanwhile; read_more() loads
// whatever else must be consistent with the entries (inside the same
// window). False also where a writer interfered: false only sends the
// address to the driver.
template <int N, class More>
[[gnu::always_inline]] inline bool find(const std::atomic<uint32_t>& seq, const std::atomic<int>& count,
                                        const std::atomic<uintptr_t> (&lo)[N], const std::atomic<uintptr_t> (&hi)[N],
                                        uintptr_t a, More&& read_more) {
  const uint32_t before = seq.load(std::memory_order_acquire);
  if (before & 1) return false;
  const int n = count.load(std::memory_order_relaxed);
  bool hit = false;
  for (int i = 0; i < n && i < N; ++i)
    if (a >= lo[i].load(std::memory_order_relaxed) && a < hi[i].load(std::memory_order_relaxed)) {
      hit = true;
      break;
    }
  read_more();
  std::atomic_thread_fence(std::memory_order_acquire);
  return hit && seq.load(std::memory_order_relaxed) == before;
}

}  // namespace dtmpi::runtime::seqlock
