#include "stencil/partition.hpp"

#include <mpi.h>

#include <algorithm>
#include <string>

namespace dtmpi::stencil {

std::vector<int> prime_factors_desc(int n) {
  std::vector<int> f;
  for (int p = 2; static_cast<int64_t>(p) * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return {f.rbegin(), f.rend()};
}

Dim3 split_grid(Dim3 extent, int n) {
  Dim3 g{1, 1, 1};
  for (int p : prime_factors_desc(n)) {
    // the currently longest pieces: extent[a] / g[a], compared exactly as
    // extent[a] * g[b] against extent[b] * g[a]; ties keep the lower axis
    int best = 0;
    for (int a = 1; a < 3; ++a)
      if (extent[a] * g[best] > extent[best] * g[a]) best = a;
    g[best] *= p;
  }
  return g;
}

std::pair<int64_t, int64_t> piece(int64_t length, int64_t n, int64_t i) {
  const int64_t base = length / n, extra = length % n;
  const int64_t start = i * base + std::min(i, extra);
  return {start, start + base + (i < extra ? 1 : 0)};
}

Result<Partition> Partition::make(Dim3 extent, int nodes, int per_node) {
  static const char* kAxis = "xyz";
  if (nodes < 1 || per_node < 1)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: " + std::to_string(nodes) + " nodes of " + std::to_string(per_node) +
                                  " subdomains: both must be at least 1"};
  for (int a = 0; a < 3; ++a)
    if (extent[a] < 1)
      return Error{MPI_ERR_ARG, std::string("dtmpi::stencil: the extent along ") + kAxis[a] + " is " +
                                    std::to_string(extent[a]) + "; every axis needs at least 1 point"};
  Partition p;
  p.extent_ = extent;
  p.nodes_ = nodes;
  p.per_node_ = per_node;
  p.node_grid_ = split_grid(extent, nodes);
  Dim3 first_node;  // the first node's piece is the largest one on every axis
  for (int a = 0; a < 3; ++a) first_node[a] = piece(extent[a], p.node_grid_[a], 0).second;
  p.local_grid_ = split_grid(first_node, per_node);
  const Dim3 g = p.grid();
  for (int a = 0; a < 3; ++a)
    if (p.min_extent(a) < 1)
      return Error{MPI_ERR_ARG, std::string("dtmpi::stencil: the extent ") + std::to_string(extent[a]) + " along " +
                                    kAxis[a] + " cannot be split into " + std::to_string(g[a]) + " subdomains (" +
                                    std::to_string(nodes) + " nodes x " + std::to_string(per_node) +
                                    " subdomains per node); use a larger extent or fewer ranks"};
  return p;
}

int Partition::id_of(Dim3 g) const {
  Dim3 node, local;
  for (int a = 0; a < 3; ++a) {
    node[a] = g[a] / local_grid_[a];
    local[a] = g[a] % local_grid_[a];
  }
  const int64_t n = node.x + node_grid_.x * (node.y + node_grid_.y * node.z);
  const int64_t l = local.x + local_grid_.x * (local.y + local_grid_.y * local.z);
  return static_cast<int>(n * per_node_ + l);
}

Dim3 Partition::index_of(int id) const {
  const int64_t n = id / per_node_, l = id % per_node_;
  const Dim3 node{n % node_grid_.x, (n / node_grid_.x) % node_grid_.y, n / (node_grid_.x * node_grid_.y)};
  const Dim3 local{l % local_grid_.x, (l / local_grid_.x) % local_grid_.y, l / (local_grid_.x * local_grid_.y)};
  return {node.x * local_grid_.x + local.x, node.y * local_grid_.y + local.y, node.z * local_grid_.z + local.z};
}

Box Partition::box(Dim3 g) const {
  Box b;
  for (int a = 0; a < 3; ++a) {
    const auto [ns, ne] = piece(extent_[a], node_grid_[a], g[a] / local_grid_[a]);
    const auto [ls, le] = piece(ne - ns, local_grid_[a], g[a] % local_grid_[a]);
    b.lo[a] = ns + ls;
    b.hi[a] = ns + le;
  }
  return b;
}

int64_t Partition::min_extent(int axis) const {
  // the last node piece is the smallest, and its last local piece too
  const auto [ns, ne] = piece(extent_[axis], node_grid_[axis], node_grid_[axis] - 1);
  const auto [ls, le] = piece(ne - ns, local_grid_[axis], local_grid_[axis] - 1);
  return le - ls;
}

std::optional<Dim3> Partition::neighbour(Dim3 g, Dim3 dir, const std::array<bool, 3>& periodic) const {
  const Dim3 n = grid();
  Dim3 r;
  for (int a = 0; a < 3; ++a) {
    r[a] = g[a] + dir[a];
    if (r[a] < 0 || r[a] >= n[a]) {
      if (!periodic[static_cast<size_t>(a)]) return std::nullopt;
      r[a] = (r[a] + n[a]) % n[a];
    }
  }
  return r;
}

const std::vector<Dim3>& directions() {
  static const std::vector<Dim3> all = [] {
    std::vector<Dim3> v;
    for (int z = -1; z <= 1; ++z)
      for (int y = -1; y <= 1; ++y)
        for (int x = -1; x <= 1; ++x)
          if (x || y || z) v.push_back({x, y, z});
    return v;
  }();
  return all;
}

}  // namespace dtmpi::stencil
