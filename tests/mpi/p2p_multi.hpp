// Helpers shared by the multi-message point-to-point tests (one binary,
// test_p2p_multi, run in the host test mode).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dtmpi/dtmpi.h"

namespace dtmpi::testing {

// A barrier that waits through dtmpi (MPI_Wait runs its progress), so every
// transfer still in flight moves while the ranks wait for each other.
inline void barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

// A counter of dtmpi_stats(): the number after `key`, 0 if absent.
inline uint64_t stat_value(const char* key) {
  std::string s = dtmpi_stats();
  auto at = s.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(s.c_str() + at + std::strlen(key), nullptr, 10);
}

}  // namespace dtmpi::testing
