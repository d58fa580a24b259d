// Placement inside a node (src/stencil/placement): the quadratic assignment
// of subdomains to slots. Hand-built cases whose optimum is known, the
// thesis's Summit node (6 GPUs: two triplets of 100 GB/s, 64 GB/s between),
// the exhaustive search against an independent brute force, the local search
// against the exhaustive one on random instances, the flow of a partition
// counted by hand, and the slot distances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "stencil/placement.hpp"

namespace st = dtmpi::stencil;
using st::Dim3;

namespace {

st::PlacementResult solve(const st::PlacementProblem& p, bool exhaustive) {
  auto r = exhaustive ? st::place_exhaustive(p) : st::place_local_search(p);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().what);
  return r.value();
}

// The flow matrix with subdomain i renamed perm[i].
std::vector<double> renamed(const std::vector<double>& flow, int n, const std::vector<int>& perm) {
  std::vector<double> out(flow.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      out[static_cast<size_t>(perm[static_cast<size_t>(i)] * n + perm[static_cast<size_t>(j)])] =
          flow[static_cast<size_t>(i * n + j)];
  return out;
}

// Brute force written independently of place_exhaustive (recursion, no
// next_permutation): the least cost of any bijection.
double brute_force(const st::PlacementProblem& p) {
  std::vector<int> perm(static_cast<size_t>(p.n), -1);
  std::vector<bool> used(static_cast<size_t>(p.n), false);
  double best = INFINITY;
  std::function<void(int)> go = [&](int i) {
    if (i == p.n) {
      best = std::min(best, st::placement_cost(p, perm));
      return;
    }
    for (int s = 0; s < p.n; ++s)
      if (!used[static_cast<size_t>(s)]) {
        used[static_cast<size_t>(s)] = true;
        perm[static_cast<size_t>(i)] = s;
        go(i + 1);
        used[static_cast<size_t>(s)] = false;
      }
  };
  go(0);
  return best;
}

st::PlacementProblem random_problem(int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  st::PlacementProblem p{n, std::vector<double>(static_cast<size_t>(n * n)), std::vector<double>(static_cast<size_t>(n * n))};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      // sparse-ish flows (a stencil has few heavy pairs), symmetric bandwidths
      p.flow[static_cast<size_t>(i * n + j)] = i == j || u(rng) < 0.4 ? 0 : std::floor(100 * u(rng));
      if (j >= i) {
        const double d = i == j ? 0 : 1 + std::floor(4 * u(rng));
        p.distance[static_cast<size_t>(i * n + j)] = p.distance[static_cast<size_t>(j * n + i)] = d;
      }
    }
  return p;
}

}  // namespace

// Two pairs of GPUs, fast inside a pair: the two heavy flows (0<->2, 1<->3)
// must each land inside a pair, which the partition's order (0,1 | 2,3) does not do.
TEST(StencilPlacement, HeavyPairsGoOnFastLinks) {
  const double fast = 1.0 / 100, slow = 1.0 / 10;
  st::PlacementProblem p{4, std::vector<double>(16, 0),
                         {0, fast, slow, slow, fast, 0, slow, slow, slow, slow, 0, fast, slow, slow, fast, 0}};
  auto set = [&](int i, int j, double f) { p.flow[static_cast<size_t>(i * 4 + j)] = p.flow[static_cast<size_t>(j * 4 + i)] = f; };
  set(0, 2, 1000);
  set(1, 3, 1000);
  set(0, 1, 1);
  set(2, 3, 1);
  for (bool exhaustive : {true, false}) {
    const auto r = solve(p, exhaustive);
    // optimum: both heavy pairs fast (2 x 2 x 1000 x fast), both light pairs slow
    EXPECT_DOUBLE_EQ(r.cost, 4 * 1000 * fast + 4 * 1 * slow);
    EXPECT_DOUBLE_EQ(r.identity_cost, 4 * 1000 * slow + 4 * 1 * fast);
    EXPECT_EQ(r.slot_of[0] / 2, r.slot_of[2] / 2);
    EXPECT_EQ(r.slot_of[1] / 2, r.slot_of[3] / 2);
    EXPECT_NEAR(st::placement_cost(p, r.slot_of), r.cost, 1e-12);
  }
}

// Equal distances: every placement costs the same and the partition's order stays.
TEST(StencilPlacement, UniformDistanceKeepsPartitionOrder) {
  std::mt19937 rng(7);
  for (int n : {2, 5, 8, 11}) {
    auto p = random_problem(n, rng);
    for (int s = 0; s < n; ++s)
      for (int t = 0; t < n; ++t) p.distance[static_cast<size_t>(s * n + t)] = s == t ? 0 : 1;
    auto r = st::place(p);
    ASSERT_TRUE(r.ok());
    std::vector<int> identity(static_cast<size_t>(n));
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(r.value().slot_of, identity) << "n " << n;
    EXPECT_EQ(r.value().exhaustive, n <= st::kExhaustiveMax);
  }
}

// A ring of flows on slots in a ring, the subdomains' names shuffled: the
// optimum is every ring neighbour on adjacent slots again.
TEST(StencilPlacement, ShuffledRingIsUnshuffled) {
  const int n = 7;
  st::PlacementProblem ring{n, std::vector<double>(n * n, 0), std::vector<double>(n * n, 0)};
  for (int i = 0; i < n; ++i) {
    ring.flow[static_cast<size_t>(i * n + (i + 1) % n)] = 10;
    for (int j = 0; j < n; ++j) {
      const int hops = std::min((i - j + n) % n, (j - i + n) % n);
      ring.distance[static_cast<size_t>(i * n + j)] = hops;
    }
  }
  const double optimum = n * 10 * 1.0;  // every flow one hop
  std::vector<int> perm{3, 6, 0, 5, 1, 4, 2};
  st::PlacementProblem shuffled{n, renamed(ring.flow, n, perm), ring.distance};
  for (bool exhaustive : {true, false}) {
    const auto r = solve(shuffled, exhaustive);
    EXPECT_DOUBLE_EQ(r.cost, optimum);
    EXPECT_GT(r.identity_cost, optimum);
  }
}

// The thesis's Summit node (section 4.4): 6 GPUs, 100 GB/s inside each
// triplet, 64 GB/s between; P = 6 on a node piece whose z is longest: z/3
// then x/2 (section 4.3), 8 doubles, radius 3, open boundaries (a node in the
// middle of a larger grid). Each triplet must get an L of the 2x3 grid: three
// faces cross (as few as any 3/3 split allows) and only two of the four
// diagonal edges -- a column of three would cut three faces and all four edges.
TEST(StencilPlacement, SummitNodeByHand) {
  auto part = st::Partition::make({512, 512, 768}, 1, 6);
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part.value().local_grid(), (Dim3{2, 1, 3}));
  const std::vector<st::QuantityShape> q(8, st::QuantityShape{8, st::Radius::uniform(3)});
  const auto flow = st::node_flow(part.value(), 0, {false, false, false}, st::Radius::uniform(3), q);
  std::vector<double> bw(36);
  for (int g = 0; g < 6; ++g)
    for (int h = 0; h < 6; ++h) bw[static_cast<size_t>(g * 6 + h)] = g == h ? 1000 : g / 3 == h / 3 ? 100 : 64;
  auto dist = st::slot_distance(6, 1, {0, 1, 2, 3, 4, 5}, bw);
  ASSERT_TRUE(dist.ok());
  const double F = 3.0 * 512 * 256 * 64, E = 3.0 * 512 * 3 * 64;  // a face, an x-z edge: bytes one way
  const double best = (3 * 2 * F + 2 * 2 * E) / 64 + (4 * 2 * F + 2 * 2 * E) / 100;
  const double column = (3 * 2 * F + 4 * 2 * E) / 64 + (4 * 2 * F) / 100;
  ASSERT_LT(best, column);
  // the partition's order (x fastest) happens to be an L already; renamed
  // subdomains put a column on each triplet, which the search must undo
  const std::vector<int> columns{0, 3, 1, 4, 2, 5};  // (x, z) -> slot: x = 0 on 0-2
  for (const auto& f : {flow, renamed(flow, 6, columns)}) {
    const auto r = solve({6, f, dist.value()}, true);
    EXPECT_NEAR(r.cost, best, 1e-9 * best);
    const auto ls = solve({6, f, dist.value()}, false);
    EXPECT_NEAR(ls.cost, best, 1e-9 * best);
  }
  EXPECT_NEAR(st::placement_cost({6, renamed(flow, 6, columns), dist.value()}, {0, 1, 2, 3, 4, 5}), column, 1e-9 * column);
}

TEST(StencilPlacement, ExhaustiveIsOptimalAndLocalSearchAgrees) {
  std::mt19937 rng(2023);
  int agree = 0, total = 0;
  for (int n = 2; n <= 7; ++n)
    for (int k = 0; k < 12; ++k, ++total) {
      const auto p = random_problem(n, rng);
      const auto ex = solve(p, true);
      const auto ls = solve(p, false);
      EXPECT_NEAR(ex.cost, brute_force(p), 1e-9) << "n " << n << " instance " << k;
      EXPECT_LE(ex.cost, ex.identity_cost);
      EXPECT_LE(ls.cost, ls.identity_cost);
      EXPECT_GE(ls.cost, ex.cost - 1e-9);  // nothing beats the optimum
      EXPECT_NEAR(st::placement_cost(p, ls.slot_of), ls.cost, 1e-9);
      std::vector<int> sorted = ls.slot_of;
      std::sort(sorted.begin(), sorted.end());
      for (int s = 0; s < n; ++s) EXPECT_EQ(sorted[static_cast<size_t>(s)], s);  // a bijection
      agree += std::fabs(ls.cost - ex.cost) <= 1e-9 ? 1 : 0;
    }
  EXPECT_GE(agree, total * 95 / 100) << agree << " of " << total;
}

TEST(StencilPlacement, LargeNodesUseLocalSearchNeverWorse) {
  std::mt19937 rng(11);
  for (int n : {9, 12, 24, 64}) {
    const auto p = random_problem(n, rng);
    auto a = st::place(p), b = st::place(p);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_FALSE(a.value().exhaustive);
    EXPECT_LE(a.value().cost, a.value().identity_cost);
    EXPECT_EQ(a.value().slot_of, b.value().slot_of);  // deterministic: every rank computes the same
  }
}

TEST(StencilPlacement, RejectsMalformedProblems) {
  EXPECT_FALSE(st::place({2, {0, 1, 1}, {0, 1, 1, 0}}).ok());
  EXPECT_FALSE(st::place({2, {0, -1, 1, 0}, {0, 1, 1, 0}}).ok());
  EXPECT_FALSE(st::place_exhaustive({11, std::vector<double>(121), std::vector<double>(121)}).ok());
  EXPECT_FALSE(st::slot_distance(2, 1, {0, 1}, {1, 2, 3}).ok());      // not square
  EXPECT_FALSE(st::slot_distance(2, 1, {0, 2}, {1, 1, 1, 1}).ok());   // GPU 2 of a 2x2 matrix
  EXPECT_FALSE(st::slot_distance(1, 2, {3, 3}, {1, 1, 1, 1}).ok());   // also where only one rank uses it
}

// Two subdomains along x of an 8x4x4 periodic grid, radius 1, one double:
// the 18 directions with a step in x all reach the other subdomain (y and z
// wrap onto itself), the 8 others reach the subdomain itself.
TEST(StencilPlacement, FlowOfAPartitionByHand) {
  auto part = st::Partition::make({8, 4, 4}, 1, 2);
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part.value().local_grid(), (Dim3{2, 1, 1}));
  const auto f = st::node_flow(part.value(), 0, {true, true, true}, st::Radius::uniform(1), {{8, st::Radius::uniform(1)}});
  // per x step: (4 + 1 + 1) x (4 + 1 + 1) points (face, edges, corners), two steps
  EXPECT_EQ(f[1], 2 * 36 * 8);
  EXPECT_EQ(f[2], 2 * 36 * 8);
  // no x step: 4 points along x times the yz ring of 6 x 6 - 4 x 4
  EXPECT_EQ(f[0], 4 * 20 * 8);
  // a quantity with no x reach adds nothing across
  const auto g = st::node_flow(part.value(), 0, {true, true, true}, st::Radius::uniform(1),
                               {{8, st::Radius{}.set(1, 1, 1).set(2, 1, 1)}});
  EXPECT_EQ(g[1], 0);
  // two nodes: nothing of node 0 reaches node 1's subdomains in its matrix
  auto two = st::Partition::make({8, 4, 4}, 2, 1);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(st::node_flow(two.value(), 0, {true, true, true}, st::Radius::uniform(1), {{8, st::Radius::uniform(1)}}).size(), 1u);
}

TEST(StencilPlacement, SlotDistances) {
  // 2 ranks x 2 slots; rank 0 on GPU 1, rank 1 on GPU 0; 50 GB/s between them
  auto d = st::slot_distance(2, 2, {1, 1, 0, 0}, {900, 50, 50, 900});
  ASSERT_TRUE(d.ok());
  const auto& v = d.value();
  EXPECT_EQ(v[0 * 4 + 1], 0);  // same rank: a direct copy
  EXPECT_DOUBLE_EQ(v[0 * 4 + 2], 1.0 / 50);
  EXPECT_DOUBLE_EQ(v[3 * 4 + 1], 1.0 / 50);
  // no matrix: 1 between any two ranks
  auto u = st::slot_distance(3, 1, {-1, -1, -1}, {});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.value(), (std::vector<double>{0, 1, 1, 1, 0, 1, 1, 1, 0}));
  // one rank with its two slots on GPUs 0 and 1 (set_gpus): a peer copy
  // between them costs the link, not 0; two ranks sharing GPU 0 pay the diagonal
  auto g = st::slot_distance(2, 2, {0, 1, 0, 1}, {1000, 200, 100, 1000});
  ASSERT_TRUE(g.ok());
  const auto& w = g.value();
  EXPECT_DOUBLE_EQ(w[0 * 4 + 1], 1.0 / 200);  // rank 0: GPU 0 -> GPU 1
  EXPECT_DOUBLE_EQ(w[1 * 4 + 0], 1.0 / 100);  // rank 0: GPU 1 -> GPU 0
  EXPECT_DOUBLE_EQ(w[0 * 4 + 2], 1.0 / 1000); // ranks 0 and 1 on GPU 0
  EXPECT_DOUBLE_EQ(w[3 * 4 + 0], 1.0 / 100);
  EXPECT_EQ(w[2 * 4 + 2], 0);
  // without a matrix, a rank's two GPUs are 1 apart like two ranks
  auto h = st::slot_distance(1, 2, {0, 1}, {});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.value(), (std::vector<double>{0, 1, 1, 0}));
}

// A rank whose slots are on two GPUs: the neighbours that exchange most go on
// the same GPU. 4 subdomains in a row (x), 2 ranks x 2 slots, each rank with
// GPUs 0 and 1 whose link is slow: the placement must keep every GPU's pair
// of subdomains adjacent (cost only across the slow links it cannot avoid).
TEST(StencilPlacement, SeveralGpusPerRankKeepNeighboursOnOneGpu) {
  const int n = 4;
  std::vector<double> flow(n * n, 0);
  for (int i = 0; i + 1 < n; ++i) flow[static_cast<size_t>(i * n + i + 1)] = flow[static_cast<size_t>((i + 1) * n + i)] = 100;
  // slots: rank 0 {GPU 0, GPU 1}, rank 1 {GPU 0, GPU 1}; GPU 0 <-> GPU 1 slow
  auto dist = st::slot_distance(2, 2, {0, 1, 0, 1}, {1000, 10, 10, 1000});
  ASSERT_TRUE(dist.ok());
  auto r = st::place_exhaustive({n, flow, dist.value()});
  ASSERT_TRUE(r.ok());
  // identity puts 0:GPU0 1:GPU1 2:GPU0 3:GPU1 -- every link slow
  EXPECT_LT(r.value().cost, r.value().identity_cost);
  int slow = 0;
  for (int i = 0; i + 1 < n; ++i) slow += r.value().slot_of[static_cast<size_t>(i)] % 2 != r.value().slot_of[static_cast<size_t>(i + 1)] % 2;
  EXPECT_EQ(slow, 1);  // one crossing is unavoidable: two subdomains per GPU
}
