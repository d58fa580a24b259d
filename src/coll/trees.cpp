// coll/trees.hpp
#include "coll/trees.hpp"

#include <algorithm>
#include <cstdint>

namespace dtmpi::coll {

namespace {

// The children of the node whose subtree is [v, v + size), and their subtree
// sizes, for the K-ary split.
void kary_split(int v, int size, int k, std::vector<int>& first, std::vector<int>& sizes) {
  const int rest = size - 1, parts = std::min(k, rest);
  int at = v + 1;
  for (int i = 0; i < parts; ++i) {
    const int s = rest / parts + (i < rest % parts ? 1 : 0);
    first.push_back(at);
    sizes.push_back(s);
    at += s;
  }
}

// Walks from the root to v; returns v's subtree size (0 if v is not in [0, n)).
int kary_walk(int v, int n, int k, int* parent) {
  if (v < 0 || v >= n) return 0;
  int node = 0, size = n;
  if (parent) *parent = -1;
  while (node != v) {
    std::vector<int> first, sizes;
    kary_split(node, size, k, first, sizes);
    size_t i = 0;
    while (i + 1 < first.size() && first[i + 1] <= v) ++i;
    if (parent) *parent = node;
    node = first[i];
    size = sizes[i];
  }
  return size;
}

}  // namespace

std::vector<int> kary_children(int v, int n, int k) {
  const int size = kary_walk(v, n, k, nullptr);
  std::vector<int> first, sizes;
  if (size > 1) kary_split(v, size, k, first, sizes);
  std::reverse(first.begin(), first.end());  // highest first
  return first;
}

int kary_parent(int v, int n, int k) {
  int parent = -1;
  kary_walk(v, n, k, &parent);
  return parent;
}

int kary_subtree_size(int v, int n, int k) { return kary_walk(v, n, k, nullptr); }

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
