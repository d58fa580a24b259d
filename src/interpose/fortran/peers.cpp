// The length of the datatype arrays of MPI_(I)Alltoallw and
// MPI_(I)Neighbor_alltoallw, which Fortran passes without one.
#include "interpose/fortran/binding.hpp"

#include "base/system_mpi.hpp"

namespace dtmpi::interpose::fortran {

int peer_count(MPI_Comm comm, Peers which) {
  int n = 0;
  if (comm == MPI_COMM_NULL) return 0;  // the C call reports the error
  if (which == Peers::kSend || which == Peers::kRecv) {
    int inter = 0;
    REAL(MPI_Comm_test_inter)(comm, &inter);
    if (inter) REAL(MPI_Comm_remote_size)(comm, &n);
    else REAL(MPI_Comm_size)(comm, &n);
    return n;
  }
  int topo = MPI_UNDEFINED;
  REAL(MPI_Topo_test)(comm, &topo);
  if (topo == MPI_CART) {
    REAL(MPI_Cartdim_get)(comm, &n);
    return 2 * n;
  }
  if (topo == MPI_GRAPH) {
    int rank = 0;
    REAL(MPI_Comm_rank)(comm, &rank);
    REAL(MPI_Graph_neighbors_count)(comm, rank, &n);
    return n;
  }
  if (topo == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    REAL(MPI_Dist_graph_neighbors_count)(comm, &in, &out, &weighted);
    return which == Peers::kNeighborSend ? out : in;
  }
  return 0;  // no topology: the C call reports MPI_ERR_TOPOLOGY
}

}  // namespace dtmpi::interpose::fortran
