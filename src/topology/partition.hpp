// Topology-aware placement (issue 6): split a weighted communication graph
// into node-sized groups of exactly equal size with as little weight between
// groups as possible. METIS (Debian's libmetis) makes the partition where it
// was found at build time; an exact-size balancing pass and a swap refinement
// follow, so every group has exactly its capacity. Pure C++ (no MPI).
#pragma once
#include <cstdint>
#include <vector>

#include "base/result.hpp"

namespace dtmpi::topology {

// Undirected weighted graph in CSR form; adjacency lists name each edge from
// both ends with the same weight. Self edges and repeated edges are allowed
// (self edges never cross groups; repeats add up).
struct Graph {
  int n = 0;
  std::vector<int> xadj{0};  // n + 1 offsets into adj/weight
  std::vector<int> adj;
  std::vector<int64_t> weight;
  // Builds the symmetric CSR graph from directed (from, to, weight) edges.
  static Graph from_edges(int n, const std::vector<int>& from, const std::vector<int>& to,
                          const std::vector<int64_t>& w);
};

// Group of each vertex: groups of exactly `group_size` vertices (the last one
// smaller when n is not a multiple), minimizing the weight between groups.
Result<std::vector<int>> partition_equal(const Graph& g, int group_size);

// Sum of the weights of edges whose ends are in different groups (each
// undirected edge once).
int64_t cut_weight(const Graph& g, const std::vector<int>& group);

// True when built with METIS.
bool have_metis();

}  // namespace dtmpi::topology
