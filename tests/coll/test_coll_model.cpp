// The thesis's tree builders and model algebra (research digest seed-001,
// claims C1 and C2), and dtmpi-tune's table: JSON round trip and the closest
// match of a lookup.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "coll/model.hpp"
#include "coll/trees.hpp"
#include "coll/tuning_table.hpp"

namespace {

using namespace dtmpi::coll;

// Every rank but the root has one parent that lists it as a child; children
// are listed highest first, at most k of them; every subtree is the
// contiguous range [v, v + size) and the children's subtrees tile it.
template <class Children, class Parent, class Size>
void check_tree(int n, int k, Children children, Parent parent, Size size, const char* what) {
  std::set<int> seen;
  for (int v = 0; v < n; ++v) {
    const std::vector<int> c = children(v);
    EXPECT_TRUE(std::is_sorted(c.rbegin(), c.rend())) << what << " n=" << n << " k=" << k << " v=" << v;
    int covered = v + 1;
    std::vector<int> ascending(c.rbegin(), c.rend());
    for (int child : ascending) {
      EXPECT_EQ(parent(child), v) << what << " n=" << n << " k=" << k;
      EXPECT_TRUE(seen.insert(child).second) << what << ": rank " << child << " twice";
      EXPECT_EQ(child, covered) << what << " n=" << n << " k=" << k << " v=" << v << ": subtrees not contiguous";
      covered += size(child);
    }
    EXPECT_EQ(covered, v + size(v)) << what << " n=" << n << " k=" << k << " v=" << v;
  }
  EXPECT_EQ(static_cast<int>(seen.size()), n - 1) << what;
  EXPECT_EQ(parent(0), -1);
  EXPECT_EQ(size(0), n);
}

TEST(CollTrees, KaryContiguousSubtreesHighestFirst) {
  for (int n = 1; n <= 64; ++n)
    for (int k : {1, 2, 4, 8}) {
      check_tree(
          n, k, [&](int v) { return kary_children(v, n, k); }, [&](int v) { return kary_parent(v, n, k); },
          [&](int v) { return kary_subtree_size(v, n, k); }, "k-ary");
      for (int v = 0; v < n; ++v) EXPECT_LE(static_cast<int>(kary_children(v, n, k).size()), k);
    }
  // k = 1: a chain
  for (int v = 0; v + 1 < 10; ++v) EXPECT_EQ(kary_children(v, 10, 1), std::vector<int>{v + 1});
  // Fig 5.3's shape for 7 ranks, radix 2: 0 -> {4, 1}, 1 -> {3, 2}, 4 -> {6, 5}
  EXPECT_EQ(kary_children(0, 7, 2), (std::vector<int>{4, 1}));
  EXPECT_EQ(kary_children(1, 7, 2), (std::vector<int>{3, 2}));
  EXPECT_EQ(kary_children(4, 7, 2), (std::vector<int>{6, 5}));
}

TEST(CollTrees, KnomialChildAscendingIsTheChildrenList) {
  for (int k : {2, 4, 8})
    for (int n = 1; n <= 64; ++n)
      for (int v = 0; v < n; ++v) {
        std::vector<int> want = knomial_children(v, n, k), got;
        std::sort(want.begin(), want.end());
        for (int i = 0, c; (c = knomial_child(v, n, k, i)) >= 0; ++i) got.push_back(c);
        EXPECT_EQ(got, want) << "k " << k << " n " << n << " v " << v;
      }
}

TEST(CollTrees, KnomialRadixTwoIsTheBinomialTree) {
  for (int n = 1; n <= 64; ++n)
    for (int k : {2, 4, 8})
      check_tree(
          n, k, [&](int v) { return knomial_children(v, n, k); }, [&](int v) { return knomial_parent(v, k); },
          [&](int v) { return knomial_subtree_size(v, n, k); }, "k-nomial");
  for (int v = 1; v < 64; ++v) EXPECT_EQ(knomial_parent(v, 2), v - (v & -v));  // ops.hpp's parent_of
  EXPECT_EQ(knomial_children(0, 8, 2), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(knomial_children(0, 9, 3), (std::vector<int>{6, 3, 2, 1}));
}

// The digest's section 3.9 table: Sun's parameters (L 2, o 0.5, g 2 us,
// G 1e-3 us/B), N = 256 nodes, t = 4, to the printed precision.
TEST(CollModel, ThesisWorkedValues) {
  const LogGP sun{2.0, 0.5, 2.0, 1e-3};
  EXPECT_NEAR(kary_broadcast(sun, 256, 8, 2), 52.1, 0.05);
  EXPECT_NEAR(kary_broadcast(sun, 256, 8, 4), 42.1, 0.05);
  EXPECT_NEAR(kary_broadcast(sun, 256, 8192, 4), 173.1, 0.05);
  EXPECT_NEAR(kary_scatter(sun, 256, 4, 8, 2), 68.3, 0.05);
  EXPECT_NEAR(kary_scatter(sun, 256, 4, 128, 8), 204.7, 0.05);
  EXPECT_NEAR(kary_scatter(sun, 256, 4, 1024, 16), 1183.1, 0.05);
  EXPECT_NEAR(dissemination_exchange(sun, 256, 4, 8, 8), 120.1, 0.05);
  EXPECT_NEAR(dissemination_exchange(sun, 256, 4, 8, 2), 169.1, 0.05);
  EXPECT_NEAR(gather_to_all_dissemination(sun, 256, 4, 8), 44.2, 0.05);
  EXPECT_NEAR(gather_to_all_flat(sun, 256, 4, 8), 647.7, 0.05);
  // argmins of the table's rows
  auto argmin = [](auto f) {
    int best = 0;
    double t = 1e300;
    for (int k : {2, 4, 8, 16, 32, 64, 256})
      if (f(k) < t) t = f(k), best = k;
    return best;
  };
  EXPECT_EQ(argmin([&](int k) { return kary_broadcast(sun, 256, 8, k); }), 4);
  EXPECT_EQ(argmin([&](int k) { return kary_scatter(sun, 256, 4, 128, k); }), 8);
  EXPECT_EQ(argmin([&](int k) { return kary_scatter(sun, 256, 4, 8192, k); }), 64);
  // Scatter's bandwidth sum equals k G B t (N - 1) / (k - 1) where N = k^lambda
  for (int k : {2, 4, 16}) {
    const LogGP bw{0, 0, 0, 1e-3};
    double sum = 0;
    for (int i = 1, kk = k; kk <= 256; ++i, kk *= k) sum += 1e-3 * 64 * 256 * 4 / static_cast<double>(kk);
    EXPECT_NEAR(kary_scatter(bw, 256, 4, 64, k), k * sum, 1e-9) << k;
  }
}

// dtmpi's algorithms: the ranking follows the parameters (latency-bound:
// fewer rounds first; bandwidth-bound: fewer bytes per rank first).
TEST(CollModel, RankingFollowsTheParameters) {
  const LogGP latency{1.0, 0.1, 0.1, 1e-9}, bandwidth{1e-3, 1e-3, 1e-3, 1e-3};
  EXPECT_EQ(ranked(latency, CollOpKind::kAllreduce, 8, 8).front(), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ranked(bandwidth, CollOpKind::kAllreduce, 8, 1 << 24).front(), Algorithm::kReduceScatterAllgather);
  // a barrier: the flat counter while arrivals are cheap next to a round
  // trip, dissemination once each arrival costs a gap comparable to it
  EXPECT_EQ(ranked(latency, CollOpKind::kBarrier, 16, 0).front(), Algorithm::kFlat);
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 1.0, 0}, CollOpKind::kBarrier, 16, 0).front(), Algorithm::kDissemination);
  // allgather: the flat read of all blocks while a gap is cheap, the
  // log-depth exchange once each read costs a gap comparable to a round trip;
  // the linear scan's chain of n-1 waits loses to log2(n) rounds
  EXPECT_EQ(ranked(latency, CollOpKind::kAllgather, 16, 8).front(), Algorithm::kFlat);
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 1.0, 0}, CollOpKind::kAllgather, 16, 8).front(), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ranked(latency, CollOpKind::kScan, 16, 8).front(), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ranked(latency, CollOpKind::kAlltoall, 16, 8).front(), Algorithm::kPairwise);
  EXPECT_EQ(ranked(bandwidth, CollOpKind::kScatter, 16, 1 << 20).front(), Algorithm::kFlat);
  for (int op = 0; op < static_cast<int>(CollOpKind::kCount); ++op) {
    const auto kind = static_cast<CollOpKind>(op);
    EXPECT_FALSE(algorithms_for(kind).empty()) << op;
    for (Algorithm a : algorithms_for(kind)) EXPECT_GE(predict(latency, kind, a, 4, 64), 0) << op;
    EXPECT_LT(predict(latency, kind, Algorithm::kSystem, 4, 64), 0);  // only measured
  }
  for (CollOpKind op : {CollOpKind::kBarrier, CollOpKind::kBcast, CollOpKind::kAllreduce, CollOpKind::kReduce}) {
    EXPECT_FALSE(algorithms_for(op).empty());
    for (Algorithm a : algorithms_for(op)) EXPECT_GE(predict(latency, op, a, 4, 64), 0);
    EXPECT_LT(predict(latency, op, Algorithm::kSystem, 4, 64), 0);  // only measured
  }
}

TEST(CollTable, JsonRoundTripAndClosestMatch) {
  TuningTable t;
  t.library_version = "0.1.0";
  t.host = "node\"1";
  t.mpi = "Open MPI";
  t.loggp = LogGP{0.2, 0.01, 0.01, 7e-5};
  auto add = [&](CollOpKind op, int64_t bytes, int ranks, Algorithm a, bool device = false) {
    TuningEntry e;
    e.key = {op, bytes, ranks, ranks, device, false, false};
    e.algorithm = a;
    e.us = 1.5;
    e.system_us = 2.5;
    t.entries.push_back(e);
  };
  add(CollOpKind::kAllreduce, 8, 2, Algorithm::kRecursiveDoubling);
  add(CollOpKind::kAllreduce, 1 << 20, 2, Algorithm::kReduceScatterAllgather);
  add(CollOpKind::kAllreduce, 8, 8, Algorithm::kSystem);
  add(CollOpKind::kAllreduce, 8, 2, Algorithm::kTree, true);
  add(CollOpKind::kBcast, 4096, 4, Algorithm::kFlat);
  TuningTable back;
  std::string why;
  ASSERT_TRUE(from_json(to_json(t), back, &why)) << why;
  ASSERT_EQ(back.entries.size(), t.entries.size());
  EXPECT_EQ(back.host, t.host);
  EXPECT_DOUBLE_EQ(back.loggp.G, 7e-5);
  for (size_t i = 0; i < t.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].algorithm, t.entries[i].algorithm);
    EXPECT_EQ(back.entries[i].key.bytes, t.entries[i].key.bytes);
    EXPECT_EQ(back.entries[i].key.device, t.entries[i].key.device);
  }
  auto pick = [&](CollOpKind op, int64_t bytes, int ranks, bool device = false) {
    TuningKey k{op, bytes, ranks, ranks, device, false, false};
    return lookup(back, k);
  };
  EXPECT_EQ(pick(CollOpKind::kAllreduce, 16, 2), Algorithm::kRecursiveDoubling);       // nearest size
  EXPECT_EQ(pick(CollOpKind::kAllreduce, 1 << 19, 2), Algorithm::kReduceScatterAllgather);
  EXPECT_EQ(pick(CollOpKind::kAllreduce, 8, 6), Algorithm::kSystem);                   // nearest ranks
  EXPECT_EQ(pick(CollOpKind::kAllreduce, 8, 2, true), Algorithm::kTree);               // memory kind first
  EXPECT_EQ(pick(CollOpKind::kBcast, 8, 64), Algorithm::kFlat);                        // the only bcast entry
  EXPECT_FALSE(pick(CollOpKind::kReduce, 8, 2).has_value());                          // no reduce entry
  // what is not such a table
  for (const char* bad : {"", "[]", "{\"entries\": []}", "{\"dtmpi_coll_table\": 2, \"entries\": []}",
                          "{\"dtmpi_coll_table\": 1, \"entries\": [{\"op\": \"scan\", \"algorithm\": \"flat\", "
                          "\"bytes\": 8, \"ranks\": 2}]}",  // scan has no flat algorithm
                          "{\"dtmpi_coll_table\": 1, \"entries\": [{\"op\": \"sort\", \"algorithm\": \"flat\", "
                          "\"bytes\": 8, \"ranks\": 2}]}",
                          "{\"dtmpi_coll_table\": 1, \"entries\": [{\"op\": \"bcast\", \"algorithm\": \"best\", "
                          "\"bytes\": 8, \"ranks\": 2}]}"})
    EXPECT_FALSE(from_json(bad, back, &why)) << bad;
}

}  // namespace
