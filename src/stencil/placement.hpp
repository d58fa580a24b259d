// Placement of a node's subdomains on its slots (Pearson thesis section 4.4):
// a quadratic assignment problem. flow[i][j] is the bytes subdomain i sends
// subdomain j per exchange (from the partition, the radius and the
// quantities), distance[s][t] the cost of one byte from slot s to slot t (the
// reciprocal of the bandwidth between the GPUs behind them); the placement
// `slot_of` minimizes sum_ij flow[i][j] * distance[slot_of[i]][slot_of[j]].
// Exhaustive up to kExhaustiveMax slots (8! = 40320 permutations), pairwise
// swap local search from several starts beyond. Plain values, no MPI.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "dtmpi/stencil.hpp"
#include "stencil/partition.hpp"

namespace dtmpi::stencil {

inline constexpr int kExhaustiveMax = 8;

// Both matrices are n x n, row-major.
struct PlacementProblem {
  int n = 0;
  std::vector<double> flow;
  std::vector<double> distance;
};

struct PlacementResult {
  std::vector<int> slot_of;  // subdomain i -> slot
  double cost = 0;           // of slot_of
  double identity_cost = 0;  // of slot_of[i] = i, what the partition's order gives
  bool exhaustive = false;   // provably optimal (every permutation tried)
};

// sum_ij flow[i][j] * distance[slot_of[i]][slot_of[j]].
double placement_cost(const PlacementProblem& p, const std::vector<int>& slot_of);

// Every permutation, identity first; a permutation replaces the best only if
// strictly cheaper (beyond rounding), so ties keep the partition's order.
// Fails for n > 10 (10! is the most it will try) or malformed matrices.
Result<PlacementResult> place_exhaustive(const PlacementProblem& p);
// Pairwise swaps until none improves, from the identity, a greedy start and
// a few seeded random starts; never worse than the identity.
Result<PlacementResult> place_local_search(const PlacementProblem& p);
// Exhaustive up to kExhaustiveMax, local search beyond.
Result<PlacementResult> place(const PlacementProblem& p);

// A quantity's element size and its exchanged radius.
struct QuantityShape {
  size_t size = 0;
  Radius radius;
};

// Flow between the subdomains of node `node` (local index l = id - node *
// per_node): the bytes of every direction whose neighbour is on the same
// node, as the exchange plan moves them (plan.cpp).
std::vector<double> node_flow(const Partition& part, int node, const std::array<bool, 3>& periodic,
                              const Radius& domain_radius, const std::vector<QuantityShape>& quantities);

// Distance between slots: slot s belongs to local rank s / per_rank and sits
// on GPU gpu_of_slot[s] (-1: host, or unknown). Two slots of one rank on one
// GPU cost 0 (a direct copy, no message); any other pair 1 / bandwidth[gs][gt]
// (GB/s, an m x m matrix by CUDA device ordinal: a peer copy between a rank's
// GPUs, a message between ranks), or 1 where no matrix is given (every link
// alike) or a GPU is unknown. Fails for a GPU ordinal outside the matrix.
Result<std::vector<double>> slot_distance(int ranks, int per_rank, const std::vector<int>& gpu_of_slot,
                                          const std::vector<double>& bandwidth);

// "subdomain -> slot" as text, for the domain's description.
std::string describe_placement(const PlacementResult& r, int per_rank);

}  // namespace dtmpi::stencil
