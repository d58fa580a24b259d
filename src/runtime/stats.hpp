// Counters of what dtmpi did, cheap enough for hot paths (relaxed atomics).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace dtmpi::runtime {

struct Stats {
  std::atomic<uint64_t> types_planned{0};    // commits that produced a plan
  std::atomic<uint64_t> types_unplanned{0};  // commits left to the system MPI
  std::atomic<uint64_t> packs{0};            // MPI_Pack served by dtmpi
  std::atomic<uint64_t> unpacks{0};          // MPI_Unpack served by dtmpi
  std::atomic<uint64_t> forwarded{0};        // pack/unpack calls passed through
  std::atomic<uint64_t> packed_bytes{0};
};

Stats& stats();
std::string format_stats();

inline void count(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace dtmpi::runtime
