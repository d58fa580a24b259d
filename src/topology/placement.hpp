// Reordering for MPI_Dist_graph_create(_adjacent) with reorder = 1. The
// weighted graph every process declared is gathered, partitioned into
// node-sized groups (topology/partition.hpp), and group k is given to the
// processes of node k. The system MPI then renumbers for real: MPI_Comm_split
// with the vertex each process plays as key gives every process that vertex
// as its rank, and the distributed graph is created on that communicator with
// the vertex's own adjacency. So Comm_rank, point-to-point, statuses, neighbor
// queries and neighborhood collectives are all the system MPI's, with no rank
// translation for dtmpi to keep.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "base/result.hpp"

namespace dtmpi::topology {

// One process's declaration: its in- and out-neighbors with weights (1 when unweighted).
struct Adjacency {
  std::vector<int> sources, destinations;
  std::vector<int> source_weights, destination_weights;
};

// Which vertex each process of `comm` (by rank) should play, from every
// vertex's adjacency, the node of each process and the processes per node.
// Returns an empty vector when nodes are not all the same size (then nothing is reordered).
std::vector<int> place_vertices(const std::vector<Adjacency>& graph, const std::vector<int>& node_of_rank);

// Collective: gathers every process's adjacency (`mine`) over `comm`. Errors
// are the system MPI's on `comm` (reported), as in node_of_ranks.
Status gather_adjacency(MPI_Comm comm, const Adjacency& mine, std::vector<Adjacency>& all);

// Node of every rank of `comm`: DTMPI_RANKS_PER_NODE consecutive ranks per
// (emulated) node when set, else MPI_COMM_TYPE_SHARED. Collective.
Status node_of_ranks(MPI_Comm comm, int ranks_per_node, std::vector<int>& node_of_rank);
// Collective over `comm` (MPI_COMM_WORLD at MPI_Init): the ranks agree on
// DTMPI_RANKS_PER_NODE -- the smallest any of them was given (0: detect the
// nodes), with a warning where they differ -- and every consumer reads that
// one value from then on. Ranks given different values would otherwise cut
// different nodes: hierarchical collectives, stencil domains and placement
// that wait on each other's node-wide steps and hang.
Status agree_ranks_per_node(MPI_Comm comm);

}  // namespace dtmpi::topology
