// Helpers shared by the multi-message point-to-point tests (one binary,
// test_p2p_multi, run in the host test mode).
#pragma once
#include <mpi.h>

#include "common/dtmpi_stats.hpp"

namespace dtmpi::testing {

// A barrier that waits through dtmpi (MPI_Wait runs its progress), so every
// transfer still in flight moves while the ranks wait for each other.
inline void barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

}  // namespace dtmpi::testing
