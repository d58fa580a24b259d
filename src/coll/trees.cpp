// coll/trees.hpp
#include "coll/trees.hpp"

#include <algorithm>
#include <cstdint>

namespace dtmpi::coll {

namespace {

// Part i of the K-ary split of the subtree [node, node + size): the ranks
// after node in min(k, size - 1) contiguous ranges, the first ones one
// larger; {first rank, size}, or {-1, 0} past the last.
struct Part {
  int first, size;
};
Part kary_part(int node, int size, int k, int i) {
  const int rest = size - 1, parts = std::min(k, rest);
  if (i < 0 || i >= parts) return {-1, 0};
  const int q = rest / parts, r = rest % parts;
  return {node + 1 + i * q + std::min(i, r), q + (i < r ? 1 : 0)};
}
// The part of that split holding rank w (node < w < node + size).
int kary_part_of(int node, int size, int k, int w) {
  const int rest = size - 1, parts = std::min(k, rest), q = rest / parts, r = rest % parts;
  const int p = w - node - 1;
  return p < r * (q + 1) ? p / (q + 1) : r + (p - r * (q + 1)) / q;
}

// Walks from the root to v; returns v's subtree size (0 if v is not in [0,
// n)). No allocation: the polling loops call it through Tree::child.
int kary_walk(int v, int n, int k, int* parent) {
  if (parent) *parent = -1;
  if (v < 0 || v >= n || k < 1) return 0;
  int node = 0, size = n;
  while (node != v) {
    const Part c = kary_part(node, size, k, kary_part_of(node, size, k, v));
    if (parent) *parent = node;
    node = c.first;
    size = c.size;
  }
  return size;
}

}  // namespace

int kary_child(int v, int n, int k, int i) {
  return kary_part(v, kary_walk(v, n, k, nullptr), k, i).first;
}

std::vector<int> kary_children(int v, int n, int k) {
  std::vector<int> out;
  for (int i = 0, c; (c = kary_child(v, n, k, i)) >= 0; ++i) out.push_back(c);
  std::reverse(out.begin(), out.end());  // highest first
  return out;
}

int kary_parent(int v, int n, int k) {
  int parent = -1;
  kary_walk(v, n, k, &parent);
  return parent;
}

int kary_subtree_size(int v, int n, int k) { return kary_walk(v, n, k, nullptr); }

int tree_depth(int n, const Tree& t) {
  // the deepest rank: the last one in both trees' orders is not always the
  // deepest, so every rank's depth (n is a communicator's size; tuning only)
  int deepest = 0;
  for (int v = 1; v < n; ++v) {
    int d = 0;
    for (int u = v; u > 0; u = t.parent(u, n)) ++d;
    deepest = std::max(deepest, d);
  }
  return deepest;
}

int Tree::parent(int v, int n) const { return shape == Shape::kKary ? kary_parent(v, n, k) : knomial_parent(v, k); }
int Tree::child(int v, int n, int i) const {
  return shape == Shape::kKary ? kary_child(v, n, k, i) : knomial_child(v, n, k, i);
}
int Tree::subtree(int v, int n) const {
  return shape == Shape::kKary ? kary_subtree_size(v, n, k) : knomial_subtree_size(v, n, k);
}

int knomial_parent(int v, int k) {
  if (v <= 0) return -1;
  int64_t place = 1;
  while ((v / place) % k == 0) place *= k;
  return static_cast<int>(v - ((v / place) % k) * place);
}

int knomial_subtree_size(int v, int n, int k) {
  if (v < 0 || v >= n) return 0;
  int64_t place = 1;  // the lowest non-zero digit's place; the root's is past n
  if (v == 0) {
    while (place < n) place *= k;
  } else {
    while ((v / place) % k == 0) place *= k;
  }
  return static_cast<int>(std::min<int64_t>(place, n - v));
}

std::vector<int> knomial_children(int v, int n, int k) {
  std::vector<int> out;
  const int64_t limit = knomial_subtree_size(v, n, k);
  for (int64_t place = 1; place < limit; place *= k)
    for (int d = 1; d < k; ++d)
      if (d * place < limit) out.push_back(static_cast<int>(v + d * place));
  std::sort(out.rbegin(), out.rend());  // highest first
  return out;
}

int knomial_child(int v, int n, int k, int i) {
  if (i < 0 || k < 2) return -1;
  const int64_t limit = knomial_subtree_size(v, n, k);
  int64_t place = 1;
  for (int j = i / (k - 1); j > 0 && place < limit; --j) place *= k;
  const int64_t offset = (i % (k - 1) + 1) * place;
  return offset < limit ? static_cast<int>(v + offset) : -1;
}

std::vector<BruckRound> bruck_rounds(int n, int k) {
  std::vector<BruckRound> out;
  int total = 0, level = 0;
  for (int64_t place = 1; place < n; place *= k, ++level)
    for (int v = 1; v < k && v * place < n; ++v) {
      BruckRound r{level, static_cast<int>(place), v, static_cast<int>(v * place), total, 0};
      r.pieces = bruck_position(n, r, k);
      total += r.pieces;
      out.push_back(r);
    }
  return out;
}

int bruck_position(int i, const BruckRound& r, int k) {
  // every full period of k places holds `place` such indices; the last,
  // partial one those of its part past v * place
  const int64_t period = int64_t{r.place} * k;
  const int64_t tail = std::clamp<int64_t>(i % period - r.shift, 0, r.place);
  return static_cast<int>(i / period * r.place + tail);
}

int bruck_next_round(const std::vector<BruckRound>& rounds, int i, int after, int k) {
  for (int t = after + 1; t < static_cast<int>(rounds.size()); ++t)
    if ((i / rounds[t].place) % k == rounds[t].digit) return t;
  return -1;
}

}  // namespace dtmpi::coll
