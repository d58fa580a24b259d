// Placement partitioner: groups of exactly the requested size, never worse
// than the default (consecutive ranks together), optimal where the optimum is
// known, and robust to self edges, repeated edges, isolated vertices and
// sizes that do not divide.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "topology/partition.hpp"

namespace topo = dtmpi::topology;

namespace {

std::map<int, int> sizes_of(const std::vector<int>& group) {
  std::map<int, int> s;
  for (int p : group) ++s[p];
  return s;
}

// A periodic 3D grid with 6 face neighbours of weight 10 and 12 edge neighbours of weight 1.
topo::Graph torus(int a, int b, int c) {
  std::vector<int> from, to;
  std::vector<int64_t> w;
  auto id = [&](int x, int y, int z) { return ((x + a) % a * b + (y + b) % b) * c + (z + c) % c; };
  for (int x = 0; x < a; ++x)
    for (int y = 0; y < b; ++y)
      for (int z = 0; z < c; ++z)
        for (int dx = -1; dx <= 1; ++dx)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dz = -1; dz <= 1; ++dz) {
              const int nz = (dx != 0) + (dy != 0) + (dz != 0);
              if (nz == 0 || nz == 3) continue;
              from.push_back(id(x, y, z));
              to.push_back(id(x + dx, y + dy, z + dz));
              w.push_back(nz == 1 ? 10 : 1);
            }
  return topo::Graph::from_edges(a * b * c, from, to, w);
}

std::vector<int> consecutive(int n, int per) {
  std::vector<int> g(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) g[static_cast<size_t>(i)] = i / per;
  return g;
}

}  // namespace

TEST(Partition, ExactSizesAndNeverWorseThanDefault) {
  for (auto [a, b, c] : {std::array<int, 3>{4, 4, 4}, {8, 4, 2}, {6, 6, 6}, {5, 3, 2}}) {
    const auto g = torus(a, b, c);
    for (int per : {2, 3, 4, 6, 8}) {
      auto part = topo::partition_equal(g, per);
      ASSERT_TRUE(part);
      ASSERT_EQ(part.value().size(), static_cast<size_t>(g.n));
      const auto sizes = sizes_of(part.value());
      const int groups = (g.n + per - 1) / per;
      ASSERT_EQ(static_cast<int>(sizes.size()), groups);
      for (auto [k, s] : sizes) EXPECT_EQ(s, k == groups - 1 && g.n % per ? g.n % per : per) << a << b << c << "/" << per;
      EXPECT_LE(topo::cut_weight(g, part.value()), topo::cut_weight(g, consecutive(g.n, per)));
    }
  }
}

TEST(Partition, FindsTheKnownOptimum) {
  // a 4x4x4 torus in groups of 8: the 2x2x2 tiling is optimal
  const auto g = torus(4, 4, 4);
  std::vector<int> tiles(64);
  for (int x = 0; x < 4; ++x)
    for (int y = 0; y < 4; ++y)
      for (int z = 0; z < 4; ++z) tiles[static_cast<size_t>((x * 4 + y) * 4 + z)] = ((x / 2) * 2 + y / 2) * 2 + z / 2;
  auto part = topo::partition_equal(g, 8);
  ASSERT_TRUE(part);
  EXPECT_LE(topo::cut_weight(g, part.value()), topo::cut_weight(g, tiles));
  // two cliques joined by one light edge, scrambled numbering: split at the light edge
  std::vector<int> from, to;
  std::vector<int64_t> w;
  const int perm[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // clique A = {0,1,2,3} by perm, B = {4..7}
  for (int side = 0; side < 2; ++side)
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j) {
        from.push_back(perm[side * 4 + i]);
        to.push_back(perm[side * 4 + j]);
        w.push_back(100);
      }
  from.push_back(perm[0]);
  to.push_back(perm[4]);
  w.push_back(1);
  const auto cliques = topo::Graph::from_edges(8, from, to, w);
  auto two = topo::partition_equal(cliques, 4);
  ASSERT_TRUE(two);
  EXPECT_EQ(topo::cut_weight(cliques, two.value()), 1);
}

TEST(Partition, SelfRepeatedIsolatedAndWeightless) {
  std::vector<int> from = {0, 0, 1, 1, 2, 5}, to = {0, 1, 0, 1, 3, 5};
  std::vector<int64_t> w = {50, 3, 4, 9, 0, 7};
  const auto g = topo::Graph::from_edges(7, from, to, w);  // 4 and 6 isolated, 2-3 weightless
  EXPECT_EQ(topo::cut_weight(g, {0, 1, 2, 3, 4, 5, 6}), 7);  // 0-1 counted once: 3 + 4
  auto part = topo::partition_equal(g, 2);
  ASSERT_TRUE(part);
  EXPECT_EQ(part.value()[0], part.value()[1]);  // the only weighted pair stays together
  const auto sizes = sizes_of(part.value());
  EXPECT_EQ(sizes.size(), 4u);
  EXPECT_FALSE(topo::partition_equal(g, 0));
  auto one = topo::partition_equal(g, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(sizes_of(one.value()).size(), 7u);
}

TEST(Partition, RandomGraphsKeepTheirSizes) {
  std::mt19937 rng(3);
  for (int t = 0; t < 20; ++t) {
    const int n = 10 + static_cast<int>(rng() % 60), per = 1 + static_cast<int>(rng() % 7);
    std::vector<int> from, to;
    std::vector<int64_t> w;
    for (int e = 0; e < 3 * n; ++e) {
      from.push_back(static_cast<int>(rng() % n));
      to.push_back(static_cast<int>(rng() % n));
      w.push_back(static_cast<int64_t>(rng() % 1000));
    }
    const auto g = topo::Graph::from_edges(n, from, to, w);
    auto part = topo::partition_equal(g, per);
    ASSERT_TRUE(part);
    for (auto [k, s] : sizes_of(part.value()))
      EXPECT_EQ(s, k == (n + per - 1) / per - 1 && n % per ? n % per : per);
    EXPECT_LE(topo::cut_weight(g, part.value()), topo::cut_weight(g, consecutive(n, per)));
  }
}
