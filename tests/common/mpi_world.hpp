// Rank and size in MPI_COMM_WORLD, and a ring topology, for the MPI tests.
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

// A distributed-graph communicator over MPI_COMM_WORLD in which every rank's
// neighbours, in and out, are (left, right) on a ring (with 2 ranks both are
// the other rank; with 1, the rank itself). MPI_COMM_NULL if the call fails.
inline MPI_Comm ring_graph() {
  const int me = world_rank(), n = world_size();
  const int nb[2] = {(me + n - 1) % n, (me + 1) % n};
  MPI_Comm ring = MPI_COMM_NULL;
  if (MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, MPI_UNWEIGHTED, 2, nb, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                     &ring) != MPI_SUCCESS)
    return MPI_COMM_NULL;
  return ring;
}

}  // namespace dtmpi::testing
