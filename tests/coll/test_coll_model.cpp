// The thesis's tree builders and model algebra (research digest seed-001,
// claims C1 and C2), and dtmpi-tune's table: JSON round trip and the closest
// match of a lookup.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <mpi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "coll/coll.hpp"
#include "coll/local_reduce.hpp"
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

// The Tree the algorithms walk (coll/trees.hpp), both shapes: the same
// contiguous trees through child(i) ascending, parent and subtree, and their
// depths. The K-ary walk without allocation against Fig 5.3's shapes.
TEST(CollTrees, TreeServesBothShapes) {
  for (Tree::Shape shape : {Tree::Shape::kKary, Tree::Shape::kKnomial})
    for (int k : {2, 4, 8})
      for (int n = 1; n <= 70; ++n) {
        const Tree t{shape, k};
        auto children = [&](int v) {
          std::vector<int> c;
          for (int i = 0, x; (x = t.child(v, n, i)) >= 0; ++i) c.push_back(x);
          EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
          std::reverse(c.begin(), c.end());
          return c;
        };
        check_tree(
            n, k, children, [&](int v) { return t.parent(v, n); }, [&](int v) { return t.subtree(v, n); },
            shape == Tree::Shape::kKary ? "Tree k-ary" : "Tree k-nomial");
        EXPECT_EQ(t.child(0, n, -1), -1);
      }
  const Tree binary{Tree::Shape::kKary, 2}, quad{Tree::Shape::kKary, 4}, binomial{Tree::Shape::kKnomial, 2};
  EXPECT_EQ(tree_depth(1, binary), 0);
  EXPECT_EQ(tree_depth(7, binary), 2);   // 0 -> {1, 4}, 1 -> {2, 3}, 4 -> {5, 6}
  EXPECT_EQ(tree_depth(8, binary), 3);
  EXPECT_EQ(tree_depth(5, quad), 1);
  EXPECT_EQ(tree_depth(6, quad), 2);
  EXPECT_EQ(tree_depth(8, binomial), 3);
  EXPECT_EQ(tree_depth(9, binomial), 3);  // 8 is a child of 0; 7 three levels down
  EXPECT_EQ(kary_child(0, 7, 2, 0), 1);
  EXPECT_EQ(kary_child(0, 7, 2, 1), 4);
  EXPECT_EQ(kary_child(0, 7, 2, 2), -1);
  EXPECT_EQ(kary_child(4, 7, 2, 1), 6);
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

// Bruck's rounds: index i moves once per non-zero digit, i ranks in all, in
// rounds of ascending place; a round's pieces are its indices, at distinct
// places [0, pieces) in index order, and the rounds' pieces tile the slot.
TEST(CollTrees, BruckRoundsMoveEveryIndexItsDistance) {
  for (int k : {2, 3, 4, 8})
    for (int n = 1; n <= 70; ++n) {
      const auto rounds = bruck_rounds(n, k);
      int total = 0;
      for (const BruckRound& r : rounds) {
        EXPECT_EQ(r.first, total) << "k " << k << " n " << n;
        EXPECT_EQ(r.place, static_cast<int>(std::pow(k, r.level)));
        EXPECT_EQ(r.shift, r.digit * r.place);
        EXPECT_LT(r.shift, n);
        int at = 0;
        for (int i = 0; i < n; ++i) {
          if ((i / r.place) % k != r.digit) continue;
          EXPECT_EQ(bruck_position(i, r, k), at++) << "k " << k << " n " << n;
        }
        EXPECT_EQ(r.pieces, at);
        total += r.pieces;
      }
      int digits = 0;
      for (int i = 1; i < n; ++i) {
        int moved = 0, moves = 0, last_place = 0;
        for (int t = bruck_next_round(rounds, i, -1, k); t >= 0; t = bruck_next_round(rounds, i, t, k)) {
          EXPECT_GT(rounds[t].place, last_place) << "one move per digit, ascending";
          last_place = rounds[t].place;
          moved += rounds[t].shift;
          ++moves;
        }
        EXPECT_EQ(moved, i) << "k " << k << " n " << n;
        for (int v = i; v; v /= k) digits += v % k != 0;
        EXPECT_GT(moves, 0);
      }
      EXPECT_EQ(total, digits) << "k " << k << " n " << n;
    }
  // radix 2 on 5 ranks: shifts 1, 2, 4 of {1, 3}, {2, 3}, {4}
  const auto five = bruck_rounds(5, 2);
  ASSERT_EQ(five.size(), 3u);
  EXPECT_EQ(five[0].pieces, 2);
  EXPECT_EQ(five[1].pieces, 2);
  EXPECT_EQ(five[2].pieces, 1);
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
  // a barrier: the radix-4 tree (two levels of three reads, one release)
  // while a gap is cheap next to a round trip -- the flat counter's arrivals
  // queue for one line -- and dissemination once each read costs a gap
  // comparable to a round trip
  EXPECT_EQ(ranked(latency, CollOpKind::kBarrier, 16, 0).front(), Algorithm::kKnomial4);
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 1.0, 0}, CollOpKind::kBarrier, 16, 0).front(), Algorithm::kDissemination);
  // allgather: the flat read of all blocks while a gap is cheap, the
  // log-depth exchange once each read costs a gap comparable to a round trip;
  // the linear scan's chain of n-1 waits loses to log2(n) rounds
  EXPECT_EQ(ranked(latency, CollOpKind::kAllgather, 16, 8).front(), Algorithm::kFlat);
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 1.0, 0}, CollOpKind::kAllgather, 16, 8).front(), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ranked(latency, CollOpKind::kScan, 16, 8).front(), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ranked(latency, CollOpKind::kAlltoall, 16, 8).front(), Algorithm::kPairwise);
  // Bruck's log_k(n) levels once each read costs a gap comparable to a round
  // trip: radix 4 (2 levels of 3 reads on 16 ranks), radix 2 where a read
  // costs more than a round trip (4 levels of one)
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 1.0, 0}, CollOpKind::kAlltoall, 16, 8).front(), Algorithm::kBruck4);
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 3.0, 0}, CollOpKind::kAlltoall, 16, 8).front(), Algorithm::kBruck);
  // Alltoallv: Bruck's too (every block padded to the largest), costing
  // Alltoall's Bruck plus the agreement and the copies into and out of the
  // padded places -- ahead of pairwise where Alltoall's Bruck is; Gatherv and
  // Scatterv have no Bruck
  EXPECT_EQ(ranked(LogGP{1.0, 0.1, 1.0, 0}, CollOpKind::kAlltoallv, 16, 8).front(), Algorithm::kBruck4);
  EXPECT_GT(predict(latency, CollOpKind::kAlltoallv, Algorithm::kBruck, 4, 64),
            predict(latency, CollOpKind::kAlltoall, Algorithm::kBruck, 4, 64));
  EXPECT_LT(predict(latency, CollOpKind::kGatherv, Algorithm::kBruck, 4, 64), 0);
  EXPECT_LT(predict(latency, CollOpKind::kScatterv, Algorithm::kBruck4, 4, 64), 0);
  // the chain's segment as its parameter: where bandwidth dominates, a 64 KiB
  // Bcast on 8 ranks pipelines in 4 KiB segments (22 segment-hops) rather
  // than going whole (7 hops of 64 KiB); a latency-bound 64 KiB Reduce the
  // other way round
  EXPECT_LT(predict(bandwidth, CollOpKind::kBcast, Algorithm::kChain4K, 8, 65536),
            predict(bandwidth, CollOpKind::kBcast, Algorithm::kChain16K, 8, 65536));
  EXPECT_LT(predict(bandwidth, CollOpKind::kBcast, Algorithm::kChain16K, 8, 65536),
            predict(bandwidth, CollOpKind::kBcast, Algorithm::kChain, 8, 65536));
  EXPECT_LT(predict(LogGP{10.0, 1.0, 0.1, 0}, CollOpKind::kReduce, Algorithm::kChain, 8, 32768),
            predict(LogGP{10.0, 1.0, 0.1, 0}, CollOpKind::kReduce, Algorithm::kChain4K, 8, 32768));
  // the chain allreduce's two overlapped pipelines on two ranks beat the
  // binomial reduce + bcast for large messages
  EXPECT_LT(predict(bandwidth, CollOpKind::kAllreduce, Algorithm::kChain, 2, 1 << 24),
            predict(bandwidth, CollOpKind::kAllreduce, Algorithm::kTree, 2, 1 << 24));
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

// MPI_IN_PLACE as a table dimension: an in-place call finds the in-place
// entries, others the rest, a table without in-place entries answers both
// alike (the tables written before it had none), and only the operations
// whose in-place form is all ranks' or none are keyed by it.
TEST(CollTable, InPlaceEntriesAnswerInPlaceCalls) {
  TuningTable t;
  auto add = [&](int64_t bytes, bool in_place, bool in_flight, Algorithm a) {
    TuningEntry e;
    e.key = {CollOpKind::kAllreduce, bytes, 4, 4, false, in_place, in_flight};
    e.algorithm = a;
    t.entries.push_back(e);
  };
  add(8, false, false, Algorithm::kSystem);
  add(8, true, false, Algorithm::kRecursiveDoubling);
  add(8, false, true, Algorithm::kTree);
  add(8, true, true, Algorithm::kReduceScatterAllgather);
  add(1 << 20, false, false, Algorithm::kReduceScatterAllgather);
  TuningTable back;
  std::string why;
  ASSERT_TRUE(from_json(to_json(t), back, &why)) << why;
  for (size_t i = 0; i < t.entries.size(); ++i) EXPECT_EQ(back.entries[i].key.in_place, t.entries[i].key.in_place);
  auto pick = [&](const TuningTable& table, int64_t bytes, bool in_place, bool in_flight) {
    return lookup(table, TuningKey{CollOpKind::kAllreduce, bytes, 4, 4, false, in_place, in_flight});
  };
  EXPECT_EQ(pick(back, 8, false, false), Algorithm::kSystem);
  EXPECT_EQ(pick(back, 8, true, false), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(pick(back, 8, false, true), Algorithm::kTree);
  EXPECT_EQ(pick(back, 8, true, true), Algorithm::kReduceScatterAllgather);
  // the same flags before the nearest size: 1 MiB in place takes the 8-byte in-place entry
  EXPECT_EQ(pick(back, 1 << 20, true, false), Algorithm::kRecursiveDoubling);
  TuningTable old;
  old.entries.push_back(t.entries[0]);
  old.entries.push_back(t.entries[4]);
  EXPECT_EQ(pick(old, 8, true, false), pick(old, 8, false, false));
  EXPECT_EQ(pick(old, 1 << 20, true, false), Algorithm::kReduceScatterAllgather);
  for (CollOpKind op : {CollOpKind::kAllreduce, CollOpKind::kAllgather, CollOpKind::kAllgatherv,
                        CollOpKind::kAlltoall, CollOpKind::kReduceScatterBlock})
    EXPECT_TRUE(in_place_keyed(op)) << op_name(op);
  for (CollOpKind op : {CollOpKind::kBarrier, CollOpKind::kBcast, CollOpKind::kReduce, CollOpKind::kGather,
                        CollOpKind::kScatter, CollOpKind::kGatherv, CollOpKind::kScatterv, CollOpKind::kScan,
                        CollOpKind::kExscan, CollOpKind::kAlltoallv, CollOpKind::kReduceScatter})
    EXPECT_FALSE(in_place_keyed(op)) << op_name(op);
}

// dtmpi's own reduction kernels against the system MPI's MPI_Reduce_local
// for every (op, type) they take: the same bytes for random values; for the
// floating specials, where the standard names no result and the MPIs differ
// from each other (MPI_MAX of +0 and -0: Open MPI 4.1 and MPICH 4.0 answer
// differently; with a NaN operand Open MPI answers the other one, MPICH the
// NaN), the same number, or both NaN, or for MAX / MIN either operand.
// Unsigned MAX / MIN are checked against C's comparison instead: Open MPI
// 4.1.4 (MPI_UNSIGNED_LONG) and MPICH 4.0.2 (MPI_UNSIGNED and the unsigned
// 64-bit types) compare them as signed, so values from 2^31 / 2^63 up come
// out wrong there and right here. Pairs the kernels do not take stay the
// system MPI's (null).
template <class T>
T element(const std::vector<unsigned char>& v, int i) {
  T x;
  std::memcpy(&x, &v[static_cast<size_t>(i) * sizeof(T)], sizeof(T));
  return x;
}

TEST(LocalReduce, AgreesWithTheSystemMpi) {
  const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_MAXLOC};
  const MPI_Datatype types[] = {MPI_DOUBLE,   MPI_FLOAT,     MPI_INT,         MPI_UNSIGNED,
                                MPI_LONG,     MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_INT32_T,
                                MPI_UINT64_T, MPI_UNSIGNED_LONG_LONG, MPI_SHORT, MPI_DOUBLE_INT, MPI_C_BOOL};
  std::mt19937_64 rng(7);
  int served = 0;
  for (const MPI_Op& op : ops)
    for (const MPI_Datatype& t : types) {
      const LocalReduceFn fn = local_reduce_for(op, t);
      const bool floating = t == MPI_DOUBLE || t == MPI_FLOAT;
      const bool u64 = t == MPI_UNSIGNED_LONG || t == MPI_UINT64_T || t == MPI_UNSIGNED_LONG_LONG;
      const bool u32 = t == MPI_UNSIGNED;
      const bool extreme = op == MPI_MAX || op == MPI_MIN;
      if (op == MPI_LAND || op == MPI_MAXLOC || t == MPI_SHORT || t == MPI_DOUBLE_INT || t == MPI_C_BOOL ||
          (floating && (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR))) {
        EXPECT_EQ(fn, nullptr);
        continue;
      }
      ASSERT_NE(fn, nullptr);
      ++served;
      const std::string what = "op " + std::to_string(&op - ops) + ", type " + std::to_string(&t - types);
      int size = 0;
      MPI_Type_size(t, &size);
      const int count = 64, specials = floating ? 8 : 0;
      std::vector<unsigned char> in(static_cast<size_t>(count * size)), inout(in.size());
      for (auto& c : in) c = static_cast<unsigned char>(rng());
      for (auto& c : inout) c = static_cast<unsigned char>(rng());
      auto put = [&](std::vector<unsigned char>& v, int i, double x) {
        if (t == MPI_DOUBLE) std::memcpy(&v[static_cast<size_t>(i) * 8], &x, 8);
        else {
          const float f = static_cast<float>(x);
          std::memcpy(&v[static_cast<size_t>(i) * 4], &f, 4);
        }
      };
      auto value = [&](const std::vector<unsigned char>& v, int i) {
        return t == MPI_DOUBLE ? element<double>(v, i) : static_cast<double>(element<float>(v, i));
      };
      if (floating) {  // eighths: exact sums and products; then the specials
        const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
        const double special[][2] = {{0.0, -0.0}, {-0.0, 0.0}, {nan, 1.0}, {1.0, nan},
                                     {nan, -nan}, {inf, -inf}, {2.5, 2.5}, {-1e30, 1e30}};
        for (int i = 0; i < count; ++i) {
          put(in, i, static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000) / 8);
          put(inout, i, static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000) / 8);
        }
        for (int i = 0; i < specials; ++i) {
          put(in, i, special[i][0]);
          put(inout, i, special[i][1]);
        }
      }
      std::vector<unsigned char> mine = inout, system = inout;
      fn(in.data(), mine.data(), count);
      ASSERT_EQ(MPI_Reduce_local(in.data(), system.data(), count, t, op), MPI_SUCCESS);
      for (int i = 0; i < count; ++i) {
        if (u64 && extreme) {
          const uint64_t x = element<uint64_t>(in, i), y = element<uint64_t>(inout, i);
          EXPECT_EQ(element<uint64_t>(mine, i), op == MPI_MAX ? std::max(x, y) : std::min(x, y)) << what;
        } else if (u32 && extreme) {
          const uint32_t x = element<uint32_t>(in, i), y = element<uint32_t>(inout, i);
          EXPECT_EQ(element<uint32_t>(mine, i), op == MPI_MAX ? std::max(x, y) : std::min(x, y)) << what;
        } else if (i < specials) {
          const double m = value(mine, i), s = value(system, i), x = value(in, i), y = value(inout, i);
          const bool same = (std::isnan(m) && std::isnan(s)) || m == s;
          const bool an_operand = extreme && (std::isnan(x) || std::isnan(y)) &&
                                  ((std::isnan(m) && (std::isnan(x) || std::isnan(y))) || m == x || m == y);
          EXPECT_TRUE(same || an_operand) << what << ", special " << i;
        } else {
          EXPECT_EQ(0, std::memcmp(&mine[static_cast<size_t>(i * size)], &system[static_cast<size_t>(i * size)],
                                   static_cast<size_t>(size)))
              << what << ", element " << i;
        }
      }
    }
  EXPECT_GE(served, 30);
}

}  // namespace
