// Collectives of a communicator that spans nodes (the thesis's node
// hierarchy, section 5.1.1; research digest 1.7): the ranks of each node
// first among themselves through dtmpi's shared-memory algorithms (its own
// communicator and segment), one leader per node (the node's lowest rank)
// between nodes through the system MPI, then the node again. Nodes come from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or DTMPI_RANKS_PER_NODE's
// emulation (nodes of that many consecutive world ranks). Leader granularity
// (the thesis's tuned parameter): DTMPI_COLL_LEADERS = g splits each node into
// g contiguous groups, each a "node" below with its own leader (a node's
// ranks agree on the smallest g any of them was given).
#pragma once
#include <mpi.h>

#include <vector>

#include "base/result.hpp"
#include "coll/coll.hpp"
#include "coll/move.hpp"

namespace dtmpi::coll {

struct Hierarchy {
  MPI_Comm node = MPI_COMM_NULL;     // this rank's node (rank order kept)
  MPI_Comm leaders = MPI_COMM_NULL;  // the nodes' lowest ranks (rank order kept); null elsewhere
  int node_rank = 0, node_size = 1;
  int my_node = 0;             // this rank's node index
  std::vector<int> node_of;    // comm rank -> node index (nodes numbered by their lowest rank)
  std::vector<int> rank_in_node;  // comm rank -> its rank in its node
  std::vector<int> leader_of;  // node index -> its leader's comm rank (= its rank in `leaders`: the index)
  // every node a block of consecutive ranks: a rank-order fold of the nodes'
  // partial results is the rank-order fold of all (non-commutative ops)
  bool blocks = false;
  ~Hierarchy();
};

// Collective over `comm`: its hierarchy, or null when it has a single node
// (or single ranks per node -- or per group: nothing to gain).
Result<std::unique_ptr<Hierarchy>> make_hierarchy(MPI_Comm comm);
// The comm ranks of `comm`'s leaders (one per group, ascending) where its
// collectives run hierarchically; empty elsewhere or before its state exists
// (not collective; dtmpi_coll_leaders() in include/dtmpi/dtmpi.h).
std::vector<int> hierarchy_leaders(MPI_Comm comm);

// Blocking collectives through the hierarchy; the intra-node phases take the
// algorithm select() names for the node's size (kSystem: the system MPI's on
// the node communicator). False: not served (see coll.cpp).
Result<bool> hier_barrier(const Hierarchy& h);
Result<bool> hier_bcast(const Hierarchy& h, void* buf, int count, MPI_Datatype type, int root);
// `root` < 0: Allreduce. `in`: this rank's input (MPI_IN_PLACE resolved);
// contiguous types of `elem` bytes (the caller's Reducer); a non-commutative
// op only where the nodes are blocks of consecutive ranks.
Result<bool> hier_reduce(const Hierarchy& h, const void* in, void* out, int count, MPI_Datatype type, MPI_Op op,
                         int root, int64_t elem, bool commutative);

// Node-aggregated Alltoall (Nishtala's "node-aggregated" variant): every
// rank hands its whole send buffer to its node's leader, the leaders exchange
// one message per pair of nodes (each block from their node's ranks to the
// other node's, in rank order), each leader hands every rank of its node its
// n blocks. `in`, `out`: n blocks of `block` bytes each (packed sides; `in`
// may be `out`: MPI_IN_PLACE). Served only where aggregated_fits (false: the
// same answer on every rank, asked before any side is packed).
Result<bool> hier_alltoall(const Hierarchy& h, const void* in, void* out, int64_t block);
// Whether the largest node's blocks, n x its ranks x `block` bytes, stay
// within kMaxAggregatedBytes: a leader holds four such buffers (gathered,
// sent, received, scattered).
inline constexpr int64_t kMaxAggregatedBytes = int64_t{64} << 20;
bool aggregated_fits(const Hierarchy& h, int64_t block);

// Node-aggregated Alltoallv (and Alltoallw, its blocks bytes by then): as
// hier_alltoall, with block j of this rank's send side at in + sends.offset[j]
// (sends.bytes[j] bytes) and of its receive side at out + recvs.offset[j];
// the leaders learn their nodes' block sizes by one gather. `in` may be
// `out` (MPI_IN_PLACE). Served only where aggregated_v_fits for the largest
// rank's bytes (the caller agrees on them first).
Result<bool> hier_alltoallv(const Hierarchy& h, const char* in, const Blocks& sends, char* out, const Blocks& recvs);
bool aggregated_v_fits(const Hierarchy& h, int64_t largest_rank_bytes);

}  // namespace dtmpi::coll
