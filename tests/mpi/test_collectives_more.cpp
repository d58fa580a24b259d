// Every other collective dtmpi takes over -- alltoall, allgather(v), gather(v),
// scatter(v), bcast, the neighbor allgathers and the non-blocking forms
// (the reductions: test_collectives_reduce.cpp, same binary) -- through dtmpi's staging path (DTMPI_TEST_STAGE_HOST=1
// stages host buffers of derived types exactly as GPU buffers are staged),
// against the system MPI doing the same call with the same types (PMPI_*):
// strided types on one or both sides, MPI_IN_PLACE, every root, zero counts.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/mpi_world.hpp"
#include "dtmpi/dtmpi.h"
#include "mpi/collectives_common.hpp"

using namespace more_collectives;

TEST(MoreCollectives, AlltoallAndInPlace) {
  const int me = world_rank(), n = world_size();
  Types t;
  for (auto [sk, rk] : kCombos) {
    const int c = 5;
    auto sbuf = filled(static_cast<size_t>(n * c * Types::width(sk) + 1), me, sk);
    std::vector<double> want(static_cast<size_t>(n * c * Types::width(rk) + 1), -1), got = want;
    ASSERT_EQ(PMPI_Alltoall(sbuf.data(), c * Types::factor(sk), t.type(sk), want.data(), c * Types::factor(rk),
                            t.type(rk), MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Alltoall(sbuf.data(), c * Types::factor(sk), t.type(sk), got.data(), c * Types::factor(rk),
                           t.type(rk), MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want) << sk << rk;
  }
  // in place, strided
  auto want = filled(static_cast<size_t>(n * 4 * 3), me, 7), got = want;
  ASSERT_EQ(PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want.data(), 4, t.strided, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), 4, t.strided, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(got, want);
  // alltoallv in place with random counts (symmetric, as MPI requires)
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  int at = 0;
  for (int i = 0; i < n; ++i) {
    counts[static_cast<size_t>(i)] = (me + i) % 3;
    displs[static_cast<size_t>(i)] = at;
    at += counts[static_cast<size_t>(i)] + 1;
  }
  want = filled(static_cast<size_t>(at * 3), me, 8);
  got = want;
  ASSERT_EQ(PMPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, want.data(), counts.data(),
                           displs.data(), t.strided, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, got.data(), counts.data(), displs.data(),
                          t.strided, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(got, want);
}

TEST(MoreCollectives, AllgatherAndAllgathervAndInPlace) {
  const int me = world_rank(), n = world_size();
  Types t;
  std::mt19937 rng(42);  // same on every rank
  for (auto [sk, rk] : kCombos) {
    const int c = 3;
    auto sbuf = filled(static_cast<size_t>(c * Types::width(sk)), me, sk);
    std::vector<double> want(static_cast<size_t>(n * c * Types::width(rk) + 2), -1), got = want;
    ASSERT_EQ(PMPI_Allgather(sbuf.data(), c * Types::factor(sk), t.type(sk), want.data(), c * Types::factor(rk),
                             t.type(rk), MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allgather(sbuf.data(), c * Types::factor(sk), t.type(sk), got.data(), c * Types::factor(rk),
                            t.type(rk), MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want);
    // v form: rank i contributes (i + round) % 3 elements (zero for some), gaps between pieces
    std::vector<int> rc(static_cast<size_t>(n)), rd(static_cast<size_t>(n));
    int at = 0;
    for (int i = 0; i < n; ++i) {
      rc[static_cast<size_t>(i)] = static_cast<int>((i + rng()) % 3) * Types::factor(rk);
      rd[static_cast<size_t>(i)] = at + 1;
      at += rc[static_cast<size_t>(i)] + 2;
    }
    const int mine = rc[static_cast<size_t>(me)] / Types::factor(rk) * Types::factor(sk);
    want.assign(static_cast<size_t>(at * Types::width(rk)), -1);
    got = want;
    ASSERT_EQ(PMPI_Allgatherv(sbuf.data(), mine, t.type(sk), want.data(), rc.data(), rd.data(), t.type(rk),
                              MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allgatherv(sbuf.data(), mine, t.type(sk), got.data(), rc.data(), rd.data(), t.type(rk),
                             MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want);
  }
  auto want = filled(static_cast<size_t>(n * 2 * 3), me, 9), got = want;
  ASSERT_EQ(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want.data(), 2, t.strided, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), 2, t.strided, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(got, want);
}

TEST(MoreCollectives, GatherScatterAtEveryRoot) {
  const int me = world_rank(), n = world_size();
  Types t;
  for (int root = 0; root < n; ++root) {
    for (auto [sk, rk] : kCombos) {
      const int c = 4;
      auto sbuf = filled(static_cast<size_t>(n * c * Types::width(sk) + 1), me, root);
      std::vector<double> want(static_cast<size_t>(n * c * Types::width(rk) + 1), -1), got = want;
      ASSERT_EQ(PMPI_Gather(sbuf.data(), c * Types::factor(sk), t.type(sk), want.data(), c * Types::factor(rk),
                            t.type(rk), root, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Gather(sbuf.data(), c * Types::factor(sk), t.type(sk), got.data(), c * Types::factor(rk),
                           t.type(rk), root, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(got, want) << "gather root " << root;
      want.assign(want.size(), -1);
      got = want;
      ASSERT_EQ(PMPI_Scatter(sbuf.data(), c * Types::factor(sk), t.type(sk), want.data(), c * Types::factor(rk),
                             t.type(rk), root, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Scatter(sbuf.data(), c * Types::factor(sk), t.type(sk), got.data(), c * Types::factor(rk),
                            t.type(rk), root, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(got, want) << "scatter root " << root;
      // v forms: rank i's piece has i % 3 elements, reversed order in the buffer
      std::vector<int> cnt(static_cast<size_t>(n)), dsp(static_cast<size_t>(n));
      int at = 0;
      for (int i = n - 1; i >= 0; --i) {
        cnt[static_cast<size_t>(i)] = (i % 3) * Types::factor(rk);
        dsp[static_cast<size_t>(i)] = at;
        at += cnt[static_cast<size_t>(i)] + 1;
      }
      const int mine = (me % 3) * Types::factor(sk);
      std::vector<double> vwant(static_cast<size_t>(at * Types::width(rk) + 1), -1), vgot = vwant;
      ASSERT_EQ(PMPI_Gatherv(sbuf.data(), mine, t.type(sk), vwant.data(), cnt.data(), dsp.data(), t.type(rk), root,
                             MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Gatherv(sbuf.data(), mine, t.type(sk), vgot.data(), cnt.data(), dsp.data(), t.type(rk), root,
                            MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(vgot, vwant) << "gatherv root " << root;
      // scatterv: the root's pieces in its receive kind's layout, each rank receiving in its send kind
      auto vsrc = filled(vwant.size(), me, 3);
      want.assign(want.size(), -1);
      got = want;
      ASSERT_EQ(PMPI_Scatterv(vsrc.data(), cnt.data(), dsp.data(), t.type(rk), want.data(), mine, t.type(sk), root,
                              MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Scatterv(vsrc.data(), cnt.data(), dsp.data(), t.type(rk), got.data(), mine, t.type(sk), root,
                             MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(got, want) << "scatterv root " << root;
    }
    // in place at the root
    auto want = filled(static_cast<size_t>(n * 2 * 3), me, 11), got = want;
    const void* s = me == root ? MPI_IN_PLACE : want.data() + 6 * me;
    ASSERT_EQ(PMPI_Gather(s, 2, t.strided, want.data(), 2, t.strided, root, MPI_COMM_WORLD), MPI_SUCCESS);
    s = me == root ? MPI_IN_PLACE : got.data() + 6 * me;
    ASSERT_EQ(MPI_Gather(s, 2, t.strided, got.data(), 2, t.strided, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "gather in place, root " << root;
  }
}

// Bcast from every root; the root's type strided, the others' contiguous
// (same element size), including a message large enough to be segmented.
TEST(MoreCollectives, BcastFromEveryRoot) {
  const int me = world_rank(), n = world_size();
  Types t;
  for (int count : {1, 7, 300000}) {
    for (int root = 0; root < n; ++root) {
      const int k = me == root ? 0 : 1;
      auto want = filled(static_cast<size_t>(count * Types::width(k)), me, root), got = want;
      ASSERT_EQ(PMPI_Bcast(want.data(), count, t.type(k), root, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Bcast(got.data(), count, t.type(k), root, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(got, want) << count << " from " << root;
    }
  }
}

// A ring as a distributed graph, each neighbour once (with 2 ranks: one
// neighbour), so that the system MPI is a sound oracle: MPICH 4.0 pairs
// repeated edges against the standard (see RepeatedNeighborsPairAsTheStandardSays).
MPI_Comm distinct_ring(int me, int n, int& degree) {
  const int nb[2] = {(me + n - 1) % n, (me + 1) % n};
  degree = n > 2 ? 2 : 1;
  MPI_Comm ring = MPI_COMM_NULL;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, degree, nb + (n > 2 ? 0 : 1), MPI_UNWEIGHTED, degree,
                                 nb + (n > 2 ? 0 : 1), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
  return ring;
}

TEST(MoreCollectives, NeighborAllgathers) {
  const int me = world_rank(), n = world_size();
  Types t;
  int degree = 0;
  MPI_Comm ring = distinct_ring(me, n, degree);
  ASSERT_NE(ring, MPI_COMM_NULL);
  auto sbuf = filled(9, me, 1);
  std::vector<double> want(40, -1), got = want;
  ASSERT_EQ(PMPI_Neighbor_allgather(sbuf.data(), 3, t.strided, want.data(), 3, t.contig, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_allgather(sbuf.data(), 3, t.strided, got.data(), 3, t.contig, ring), MPI_SUCCESS);
  EXPECT_EQ(got, want);
  const int rc[2] = {3, 3}, rd[2] = {7, 1};  // with one neighbour: only the first
  want.assign(40, -1);
  got = want;
  ASSERT_EQ(PMPI_Neighbor_allgatherv(sbuf.data(), 3, t.contig, want.data(), rc, rd, t.strided, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_allgatherv(sbuf.data(), 3, t.contig, got.data(), rc, rd, t.strided, ring), MPI_SUCCESS);
  EXPECT_EQ(got, want);
  std::vector<double> awant(40, -1), agot = awant;
  ASSERT_EQ(PMPI_Neighbor_alltoall(sbuf.data(), 1, t.strided, awant.data(), 1, t.strided, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_alltoall(sbuf.data(), 1, t.strided, agot.data(), 1, t.strided, ring), MPI_SUCCESS);
  EXPECT_EQ(agot, awant);
  MPI_Comm_free(&ring);
}


// Non-blocking forms: several in flight at once, completed by one Waitall,
// results unpacked at completion.
TEST(MoreCollectives, NonBlockingFormsInFlightTogether) {
  const int me = world_rank(), n = world_size();
  Types t;
  auto sbuf = filled(static_cast<size_t>(n * 4 * 3), me, 5);
  std::vector<double> w1(static_cast<size_t>(n * 4 * 3), -1), g1 = w1, w2 = w1, g2 = w1, w3(12, -1), g3 = w3,
                                                             w4(12, -1), g4 = w4;
  auto w5 = filled(30, me, 6), g5 = w5;
  PMPI_Alltoall(sbuf.data(), 4, t.strided, w1.data(), 4, t.contig, MPI_COMM_WORLD);
  PMPI_Allgather(sbuf.data(), 4, t.contig, w2.data(), 4, t.strided, MPI_COMM_WORLD);
  MPI_Op sum;
  MPI_Op_create(sum2, 1, &sum);
  PMPI_Allreduce(sbuf.data(), w3.data(), 4, t.strided, sum, MPI_COMM_WORLD);
  PMPI_Scatter(sbuf.data(), 4, t.strided, w4.data(), 4, t.strided, n - 1, MPI_COMM_WORLD);
  PMPI_Bcast(w5.data(), 10, t.strided, 0, MPI_COMM_WORLD);
  MPI_Request reqs[5];
  ASSERT_EQ(MPI_Ialltoall(sbuf.data(), 4, t.strided, g1.data(), 4, t.contig, MPI_COMM_WORLD, &reqs[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Iallgather(sbuf.data(), 4, t.contig, g2.data(), 4, t.strided, MPI_COMM_WORLD, &reqs[1]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Iallreduce(sbuf.data(), g3.data(), 4, t.strided, sum, MPI_COMM_WORLD, &reqs[2]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Iscatter(sbuf.data(), 4, t.strided, g4.data(), 4, t.strided, n - 1, MPI_COMM_WORLD, &reqs[3]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Ibcast(g5.data(), 10, t.strided, 0, MPI_COMM_WORLD, &reqs[4]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(g1, w1);
  EXPECT_EQ(g2, w2);
  EXPECT_EQ(g3, w3);
  EXPECT_EQ(g4, w4);
  EXPECT_EQ(g5, w5);
  // one more, completed by MPI_Test polling
  std::vector<double> w6(static_cast<size_t>(n * 4 * 3), -1), g6 = w6;
  std::vector<int> cnt(static_cast<size_t>(n), 4), dsp(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) dsp[static_cast<size_t>(i)] = 4 * i;
  PMPI_Alltoallv(sbuf.data(), cnt.data(), dsp.data(), t.strided, w6.data(), cnt.data(), dsp.data(), t.strided,
                 MPI_COMM_WORLD);
  MPI_Request r;
  ASSERT_EQ(MPI_Ialltoallv(sbuf.data(), cnt.data(), dsp.data(), t.strided, g6.data(), cnt.data(), dsp.data(),
                           t.strided, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  for (int flag = 0; !flag;) ASSERT_EQ(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(g6, w6);
  // the prefix and irregular scatter reductions' non-blocking forms
  std::vector<double> w7(12, -1), g7 = w7, w8(12, -1), g8 = w8;
  PMPI_Scan(sbuf.data(), w7.data(), 4, t.strided, sum, MPI_COMM_WORLD);
  PMPI_Reduce_scatter(sbuf.data(), w8.data(), cnt.data(), t.strided, sum, MPI_COMM_WORLD);
  MPI_Request rs[2];
  ASSERT_EQ(MPI_Iscan(sbuf.data(), g7.data(), 4, t.strided, sum, MPI_COMM_WORLD, &rs[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Ireduce_scatter(sbuf.data(), g8.data(), cnt.data(), t.strided, sum, MPI_COMM_WORLD, &rs[1]),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(g7, w7);
  EXPECT_EQ(g8, w8);
  MPI_Op_free(&sum);
}

// Repeated neighbours pair as MPI-4.1 sec. 8.6 defines: on a distributed
// graph the k-th message from p to q lands in q's k-th receive slot from p;
// on a Cartesian topology block s of the sender lands in block s^1 of the
// receiver, also when a periodic dimension of 1 or 2 processes makes both
// neighbours one process. Checked against values computed from those rules
// (not against the system MPI: MPICH 4.0's neighbor_alltoall reverses the
// receive order on graphs), on dtmpi's point-to-point path.
TEST(MoreCollectives, RepeatedNeighborsPairAsTheStandardSays) {
  const char* host = std::getenv("DTMPI_TEST_STAGE_HOST");
  if (!host || std::string(host) != "1") GTEST_SKIP() << "the point-to-point path runs in the host test mode";
  const int me = world_rank(), n = world_size();
  Types t;
  auto block_value = [](int rank, int block, int k) { return rank * 1000.0 + block * 10.0 + k; };
  auto run = [&](MPI_Comm comm, const std::vector<int>& srcs, const std::vector<int>& dsts,
                 const std::function<std::pair<int, int>(int)>& origin, const char* what) {
    const int in = static_cast<int>(srcs.size()), out = static_cast<int>(dsts.size());
    std::vector<double> sbuf(static_cast<size_t>(out * 3)), rbuf(static_cast<size_t>(in * 3), -1);
    for (int b = 0; b < out; ++b)
      for (int k = 0; k < 2; ++k) sbuf[static_cast<size_t>(b * 3 + k)] = block_value(me, b, k);
    ASSERT_EQ(MPI_Neighbor_alltoall(sbuf.data(), 1, t.strided, rbuf.data(), 1, t.strided, comm), MPI_SUCCESS);
    for (int j = 0; j < in; ++j) {
      const auto [rank, block] = origin(j);
      for (int k = 0; k < 2; ++k)
        EXPECT_EQ(rbuf[static_cast<size_t>(j * 3 + k)], block_value(rank, block, k)) << what << " slot " << j;
      EXPECT_EQ(rbuf[static_cast<size_t>(j * 3 + 2)], -1) << what << " gap " << j;
    }
    // the allgather form: every slot j holds sources[j]'s one block
    std::vector<double> one{block_value(me, 9, 0), block_value(me, 9, 1), 0}, all(static_cast<size_t>(in * 3), -1);
    ASSERT_EQ(MPI_Neighbor_allgather(one.data(), 1, t.strided, all.data(), 1, t.strided, comm), MPI_SUCCESS);
    for (int j = 0; j < in; ++j)
      for (int k = 0; k < 2; ++k)
        EXPECT_EQ(all[static_cast<size_t>(j * 3 + k)], block_value(srcs[static_cast<size_t>(j)], 9, k)) << what << " allgather " << j;
  };
  const auto self_before = dtmpi::testing::stat_value("pieces to itself ");
  // distributed graphs: each rank lists its right neighbour twice and its
  // left once, both ways; then itself twice among them (messages to itself,
  // which dtmpi moves without messages, matched in posting order too)
  const int left = (me + n - 1) % n, right = (me + 1) % n;
  auto graph_case = [&](const std::function<std::vector<int>(int)>& dests_of,
                        const std::function<std::vector<int>(int)>& sources_of, const char* what) {
    std::vector<int> dsts = dests_of(me), srcs = sources_of(me);
    MPI_Comm graph;
    ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(srcs.size()), srcs.data(), MPI_UNWEIGHTED,
                                             static_cast<int>(dsts.size()), dsts.data(), MPI_UNWEIGHTED, MPI_INFO_NULL,
                                             0, &graph), MPI_SUCCESS);
    run(graph, srcs, dsts, [&](int j) {
      const int p = srcs[static_cast<size_t>(j)];
      int k = 0;  // this is the k-th slot from p ...
      for (int i = 0; i < j; ++i) k += srcs[static_cast<size_t>(i)] == p;
      const std::vector<int> pd = dests_of(p);  // ... so p's k-th block to me
      for (int b = 0; b < static_cast<int>(pd.size()); ++b)
        if (pd[static_cast<size_t>(b)] == me && k-- == 0) return std::make_pair(p, b);
      return std::make_pair(-1, -1);
    }, what);
    MPI_Comm_free(&graph);
  };
  graph_case([&](int p) { return std::vector<int>{(p + 1) % n, (p + n - 1) % n, (p + 1) % n}; },
             [&](int) { return std::vector<int>{left, right, left}; }, "graph");
  graph_case([&](int p) { return std::vector<int>{p, (p + 1) % n, p, (p + n - 1) % n}; },
             [&](int) { return std::vector<int>{me, left, right, me}; }, "graph with self edges");
  // a periodic Cartesian grid n x 1: dimension 0 of n processes, dimension 1 of 1
  const int dims[2] = {n, 1}, periods[2] = {1, 1};
  MPI_Comm cart;
  ASSERT_EQ(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart), MPI_SUCCESS);
  int cme = 0;
  MPI_Comm_rank(cart, &cme);
  std::vector<int> cn;
  for (int d = 0; d < 2; ++d) {
    int lo, hi;
    MPI_Cart_shift(cart, d, 1, &lo, &hi);
    cn.push_back(lo);
    cn.push_back(hi);
  }
  run(cart, cn, cn, [&](int j) { return std::make_pair(cn[static_cast<size_t>(j)], j ^ 1); }, "cart");
  MPI_Comm_free(&cart);
  // the self edges and the dimension of 1 process went without messages to itself
  EXPECT_GE(dtmpi::testing::stat_value("pieces to itself ") - self_before, 4u) << dtmpi_stats();
}

// Zero counts cost nothing (no staging) and the calls above were staged.
TEST(MoreCollectives, StagingPathWasTakenAndZeroCountsSkipIt) {
  auto staged = [] {
    const std::string s = dtmpi_stats();
    const auto at = s.find("staged collectives ");
    return at == std::string::npos ? 0ull : std::strtoull(s.c_str() + at + 19, nullptr, 10);
  };
  const auto before = staged();
  const char* recv = std::getenv("DTMPI_HOST_RECV");
  if (recv && std::string(recv) == "direct")
    EXPECT_GT(before, 0u);  // receive sides go to the system MPI as they are: fewer calls stage
  else
    EXPECT_GE(before, 30u);
  Types t;
  double x = 0;
  ASSERT_EQ(MPI_Bcast(&x, 0, t.strided, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, &x, 0, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(staged(), before);
}

// Intercommunicators: the roots' MPI_ROOT / MPI_PROC_NULL roles and the
// remote group's sizes, with a strided type on every side, against the
// system MPI.
TEST(MoreCollectives, IntercommunicatorRoles) {
  const int me = world_rank(), n = world_size();
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  Types t;
  const int color = me % 2;
  MPI_Comm local, inter;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, color, me, &local), MPI_SUCCESS);
  ASSERT_EQ(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &inter), MPI_SUCCESS);
  int lme = 0, remote = 0;
  MPI_Comm_rank(local, &lme);
  MPI_Comm_remote_size(inter, &remote);
  const int c = 3;
  // group 0's rank 0 is the root; the rest of group 0 is MPI_PROC_NULL; group 1 names it as remote rank 0
  const int root = color == 0 ? (lme == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  auto src = filled(static_cast<size_t>((remote + n) * c * 3), me, 1);
  {  // bcast
    auto want = filled(static_cast<size_t>(c * 3), me, 2), got = want;
    ASSERT_EQ(PMPI_Bcast(want.data(), c, t.strided, root, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Bcast(got.data(), c, t.strided, root, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "bcast";
  }
  {  // gather to the root from the remote group
    std::vector<double> want(static_cast<size_t>(remote * c * 3), -1), got = want;
    ASSERT_EQ(PMPI_Gather(src.data(), c, t.strided, want.data(), c, t.strided, root, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Gather(src.data(), c, t.strided, got.data(), c, t.strided, root, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "gather";
  }
  {  // scatter from the root to the remote group
    std::vector<double> want(static_cast<size_t>(c * 3), -1), got = want;
    ASSERT_EQ(PMPI_Scatter(src.data(), c, t.strided, want.data(), c, t.strided, root, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Scatter(src.data(), c, t.strided, got.data(), c, t.strided, root, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "scatter";
  }
  {  // allgather and alltoall across the groups
    std::vector<double> want(static_cast<size_t>(remote * c * 3), -1), got = want;
    ASSERT_EQ(PMPI_Allgather(src.data(), c, t.strided, want.data(), c, t.strided, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allgather(src.data(), c, t.strided, got.data(), c, t.strided, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "allgather";
    want.assign(want.size(), -1);
    got = want;
    ASSERT_EQ(PMPI_Alltoall(src.data(), c, t.strided, want.data(), c, t.strided, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Alltoall(src.data(), c, t.strided, got.data(), c, t.strided, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "alltoall";
  }
  {  // reductions with a user op
    MPI_Op sum;
    MPI_Op_create(sum2, 1, &sum);
    std::vector<double> want(static_cast<size_t>(c * 3), -5), got = want;
    ASSERT_EQ(PMPI_Allreduce(src.data(), want.data(), c, t.strided, sum, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allreduce(src.data(), got.data(), c, t.strided, sum, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "allreduce";
    want.assign(want.size(), -5);
    got = want;
    ASSERT_EQ(PMPI_Reduce(src.data(), want.data(), c, t.strided, sum, root, inter), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce(src.data(), got.data(), c, t.strided, sum, root, inter), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "reduce";
    MPI_Op_free(&sum);
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}
