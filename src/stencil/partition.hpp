// Partitioning of the global grid (Pearson thesis section 4.3): two levels,
// nodes first, then the subdomains of a node (its ranks times the subdomains
// per rank). At each level the count's prime factors, largest first, each
// divide the axis whose pieces are currently longest (ties: the lowest axis,
// x before y before z). Plain values, no MPI.
//
// Uneven extents: an axis of L points split into n pieces gives the first
// L % n pieces floor(L/n) + 1 points and the rest floor(L/n). The node level
// splits the global extent; every node's piece is then split by the same
// per-node grid, chosen on the first (largest) node piece, so that along
// each axis a subdomain's extent depends only on its index along that axis
// and neighbours that share a face always agree on its size.
#pragma once
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "dtmpi/stencil.hpp"

namespace dtmpi::stencil {

// Prime factors of n >= 1, largest first (1: none).
std::vector<int> prime_factors_desc(int n);

// How many pieces each axis of `extent` gets when split into `n`.
Dim3 split_grid(Dim3 extent, int n);

// [start, end) of piece i of n of an axis of `length` points (remainders first).
std::pair<int64_t, int64_t> piece(int64_t length, int64_t n, int64_t i);

class Partition {
 public:
  // Splits `extent` over `nodes` nodes of `per_node` subdomains each; fails
  // (MPI_ERR_ARG, a message that names the axis) when an axis would get
  // pieces of no points.
  static Result<Partition> make(Dim3 extent, int nodes, int per_node);

  Dim3 extent() const { return extent_; }
  int nodes() const { return nodes_; }
  int per_node() const { return per_node_; }
  Dim3 node_grid() const { return node_grid_; }
  Dim3 local_grid() const { return local_grid_; }
  Dim3 grid() const { return {node_grid_.x * local_grid_.x, node_grid_.y * local_grid_.y, node_grid_.z * local_grid_.z}; }
  int count() const { return nodes_ * per_node_; }

  // Subdomain ids: node * per_node + (linear index inside the node, x fastest).
  int id_of(Dim3 g) const;
  Dim3 index_of(int id) const;
  int node_of(int id) const { return id / per_node_; }
  Box box(Dim3 g) const;
  // The smallest subdomain extent along `axis`.
  int64_t min_extent(int axis) const;
  // The neighbour of `g` in direction `dir` (components -1, 0, 1), wrapping
  // around where that axis is periodic; none past a non-periodic boundary.
  std::optional<Dim3> neighbour(Dim3 g, Dim3 dir, const std::array<bool, 3>& periodic) const;

 private:
  Dim3 extent_;
  int nodes_ = 1, per_node_ = 1;
  Dim3 node_grid_{1, 1, 1}, local_grid_{1, 1, 1};
};

// The 26 directions (components -1, 0, 1, not all 0), in a fixed order.
const std::vector<Dim3>& directions();
inline int direction_index(Dim3 d) {  // the position in directions()
  const int i = static_cast<int>((d.x + 1) + 3 * (d.y + 1) + 9 * (d.z + 1));
  return i < 13 ? i : i - 1;
}

}  // namespace dtmpi::stencil
