// MPI_Dist_graph_create_adjacent and MPI_Dist_graph_create with reorder = 1:
// topology-aware placement (src/topology/placement.hpp). Without reorder, or
// on an intercommunicator, or where nodes hold different numbers of ranks,
// the call goes to the system MPI unchanged.
#include <vector>

#include "base/log.hpp"
#include "coll/coll.hpp"
#include "interpose/coll_p2p.hpp"
#include "interpose/export.hpp"
#include "runtime/config.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"
#include "topology/placement.hpp"

namespace topo = dtmpi::topology;
using dtmpi::ok_status;
using dtmpi::Result;
using dtmpi::Status;
using dtmpi::interpose::result;

namespace {

std::vector<int> weights_or_ones(const int* w, int degree) {
  if (w == MPI_UNWEIGHTED || w == MPI_WEIGHTS_EMPTY || w == nullptr) return std::vector<int>(static_cast<size_t>(degree), 1);
  return std::vector<int>(w, w + degree);
}

// Gathers the graph, places it, and creates the distributed graph on a
// communicator the system MPI renumbered. False: nothing was done (the caller
// passes the call through). The system MPI's calls on `comm` (and on the
// communicators made of it, which inherit its error handler) report their
// errors themselves.
Result<bool> create_placed(MPI_Comm comm, const topo::Adjacency& mine, bool weighted, MPI_Info info, MPI_Comm* out) {
  std::vector<topo::Adjacency> all;
  DTMPI_TRY(topo::gather_adjacency(comm, mine, all));
  std::vector<int> nodes;
  DTMPI_TRY(topo::node_of_ranks(comm, static_cast<int>(dtmpi::runtime::config().ranks_per_node), nodes));
  int me = 0, n = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  REAL(MPI_Comm_size)(comm, &n);
  // computed on rank 0 and broadcast: every process must agree
  std::vector<int> vertex(static_cast<size_t>(n), -1);
  if (me == 0) {
    auto v = topo::place_vertices(all, nodes);
    if (!v.empty()) vertex = v;
  }
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Bcast)(vertex.data(), n, MPI_INT, 0, comm));
  if (vertex[0] < 0) {
    if (me == 0) DTMPI_LOG(kInfo, "Dist_graph reorder: nodes hold different numbers of ranks; not reordered");
    return false;
  }
  MPI_Comm renumbered;
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Comm_split)(comm, 0, vertex[static_cast<size_t>(me)], &renumbered));
  const auto& a = all[static_cast<size_t>(vertex[static_cast<size_t>(me)])];  // the vertex this process now plays
  const int in = static_cast<int>(a.sources.size()), outd = static_cast<int>(a.destinations.size());
  auto wptr = [&](const std::vector<int>& w, int degree) -> const int* {
    if (!weighted) return MPI_UNWEIGHTED;
    return degree == 0 ? MPI_WEIGHTS_EMPTY : w.data();
  };
  Status created = DTMPI_MPI_STATUS_REPORTED(
      REAL(MPI_Dist_graph_create_adjacent)(renumbered, in, a.sources.data(), wptr(a.source_weights, in), outd,
                                           a.destinations.data(), wptr(a.destination_weights, outd), info, 0, out));
  REAL(MPI_Comm_free)(&renumbered);
  DTMPI_TRY(created);
  return true;
}

bool reorderable(MPI_Comm comm, int reorder) {
  if (!reorder || !dtmpi::runtime::active()) return false;
  int inter = 0;
  REAL(MPI_Comm_test_inter)(comm, &inter);
  return !inter;
}

}  // namespace

namespace {

Status create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree,
                       const int destinations[], const int destweights[], MPI_Info info, int reorder,
                       MPI_Comm* comm_dist_graph) {
  if (reorderable(comm_old, reorder) && indegree >= 0 && outdegree >= 0) {
    topo::Adjacency mine;
    mine.sources.assign(sources, sources + indegree);
    mine.destinations.assign(destinations, destinations + outdegree);
    mine.source_weights = weights_or_ones(sourceweights, indegree);
    mine.destination_weights = weights_or_ones(destweights, outdegree);
    auto placed = create_placed(comm_old, mine, sourceweights != MPI_UNWEIGHTED, info, comm_dist_graph);
    if (!placed) return placed.error();
    if (placed.value()) return ok_status();
  }
  return DTMPI_MPI_FORWARD(REAL(MPI_Dist_graph_create_adjacent)(comm_old, indegree, sources, sourceweights, outdegree,
                                                                destinations, destweights, info, reorder,
                                                                comm_dist_graph));
}

Status create_general(MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[],
                      const int weights[], MPI_Info info, int reorder, MPI_Comm* comm_dist_graph) {
  if (reorderable(comm_old, reorder) && n >= 0) {
    // any process may declare any edge: gather them all, then give every
    // vertex its own in- and out-lists (adjacent form)
    int size = 0, me = 0;
    REAL(MPI_Comm_size)(comm_old, &size);
    REAL(MPI_Comm_rank)(comm_old, &me);
    std::vector<int> edges;  // (src, dst, weight) triples
    for (int i = 0, at = 0; i < n; ++i)
      for (int j = 0; j < degrees[i]; ++j, ++at) {
        edges.push_back(sources[i]);
        edges.push_back(destinations[at]);
        edges.push_back(weights == MPI_UNWEIGHTED || weights == MPI_WEIGHTS_EMPTY ? 1 : weights[at]);
      }
    int count = static_cast<int>(edges.size());
    std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
    DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Allgather)(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_old));
    int total = 0;
    for (int r = 0; r < size; ++r) displs[static_cast<size_t>(r)] = total, total += counts[static_cast<size_t>(r)];
    std::vector<int> all(static_cast<size_t>(std::max(total, 1)));
    DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Allgatherv)(edges.data(), count, MPI_INT, all.data(), counts.data(),
                                                  displs.data(), MPI_INT, comm_old));
    topo::Adjacency mine;
    for (int e = 0; e + 2 < total; e += 3) {
      const int s = all[static_cast<size_t>(e)], d = all[static_cast<size_t>(e + 1)], w = all[static_cast<size_t>(e + 2)];
      if (s == me) mine.destinations.push_back(d), mine.destination_weights.push_back(w);
      if (d == me) mine.sources.push_back(s), mine.source_weights.push_back(w);
    }
    auto placed = create_placed(comm_old, mine, weights != MPI_UNWEIGHTED, info, comm_dist_graph);
    if (!placed) return placed.error();
    if (placed.value()) return ok_status();
  }
  return DTMPI_MPI_FORWARD(REAL(MPI_Dist_graph_create)(comm_old, n, sources, degrees, destinations, weights, info,
                                                       reorder, comm_dist_graph));
}

// Every member of a new topology communicator is in the call that creates
// it: the one moment its private duplicate for the point-to-point
// neighborhood collectives can be made collectively (interpose/coll_p2p.hpp).
Status with_collective_dup(Status created, MPI_Comm* out) {
  if (created && out && *out != MPI_COMM_NULL) {
    dtmpi::interpose::prepare_p2p_collectives(*out);
    dtmpi::coll::prepare(*out);  // dtmpi's collective state, as for MPI_Comm_dup (interpose/comm_create.cpp)
  }
  return created;
}

}  // namespace

DTMPI_EXPORT int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                                const int sourceweights[], int outdegree, const int destinations[],
                                                const int destweights[], MPI_Info info, int reorder,
                                                MPI_Comm* comm_dist_graph) {
  return result(comm_old,
                with_collective_dup(create_adjacent(comm_old, indegree, sources, sourceweights, outdegree, destinations,
                                                    destweights, info, reorder, comm_dist_graph),
                                    comm_dist_graph));
}

DTMPI_EXPORT int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                                       const int destinations[], const int weights[], MPI_Info info, int reorder,
                                       MPI_Comm* comm_dist_graph) {
  return result(comm_old, with_collective_dup(create_general(comm_old, n, sources, degrees, destinations, weights, info,
                                                             reorder, comm_dist_graph),
                                              comm_dist_graph));
}

DTMPI_EXPORT int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                                 MPI_Comm* comm_cart) {
  return result(
      comm_old,
      with_collective_dup(DTMPI_MPI_FORWARD(REAL(MPI_Cart_create)(comm_old, ndims, dims, periods, reorder, comm_cart)),
                          comm_cart));
}
