// Rank and size in MPI_COMM_WORLD, for the MPI tests.
#pragma once
#include <mpi.h>

namespace dtmpi::testing {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

}  // namespace dtmpi::testing
