// MPI_Alltoallv and MPI_Neighbor_alltoallv through dtmpi's staging path
// (DTMPI_TEST_STAGE_HOST=1 stages host buffers of derived types exactly as
// GPU buffers are staged), against the system MPI doing the same exchange
// with the same types (PMPI_*): random counts with zeros, random gaps between
// pieces, a derived type on one side and another of the same signature on
// the other, and the reverse.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/mpi_world.hpp"
#include "dtmpi/dtmpi.h"

namespace {

struct Layout {
  std::vector<int> counts, displs;
  int span = 0;  // elements
};

Layout random_layout(std::mt19937& rng, int n) {
  Layout l;
  for (int i = 0; i < n; ++i) {
    l.counts.push_back(static_cast<int>(rng() % 4 == 0 ? 0 : rng() % 5));
    l.displs.push_back(l.span + static_cast<int>(rng() % 3));
    l.span = l.displs.back() + l.counts.back();
  }
  return l;
}

// Every rank agrees on every rank's layouts (same seed); what rank i sends to j
// must be what j expects from i.
void exchange_layouts(int n, int seed, std::vector<Layout>& send, std::vector<Layout>& recv) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  send.clear();
  for (int r = 0; r < n; ++r) send.push_back(random_layout(rng, n));
  recv.assign(static_cast<size_t>(n), Layout{});
  for (int j = 0; j < n; ++j) {
    auto& l = recv[static_cast<size_t>(j)];
    for (int i = 0; i < n; ++i) {
      l.counts.push_back(send[static_cast<size_t>(i)].counts[static_cast<size_t>(j)]);
      l.displs.push_back(l.span + static_cast<int>(rng() % 3));
      l.span = l.displs.back() + l.counts.back();
    }
  }
}

}  // namespace

TEST(Collectives, AlltoallvDerivedTypesMatchTheSystemMpi) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Datatype pairs;  // 2 of every 3 doubles, as one element of 2 doubles... extent 3
  MPI_Datatype vec;
  MPI_Type_vector(1, 2, 3, MPI_DOUBLE, &vec);
  MPI_Type_create_resized(vec, 0, 3 * sizeof(double), &pairs);
  MPI_Type_commit(&pairs);
  MPI_Datatype two;  // the same signature, contiguous
  MPI_Type_contiguous(2, MPI_DOUBLE, &two);
  MPI_Type_commit(&two);
  for (int round = 0; round < 6; ++round) {
    std::vector<Layout> send, recv;
    exchange_layouts(n, 100 + round, send, recv);
    const Layout& sl = send[static_cast<size_t>(me)];
    const Layout& rl = recv[static_cast<size_t>(me)];
    const bool flip = round % 2;  // which side has the strided type
    MPI_Datatype st = flip ? two : pairs, rt = flip ? pairs : two;
    const int sw = flip ? 2 : 3, rw = flip ? 3 : 2;  // doubles per element extent
    std::vector<double> sbuf(static_cast<size_t>(sl.span * sw + 1));
    for (size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = me * 1000 + static_cast<double>(i);
    std::vector<double> want(static_cast<size_t>(rl.span * rw + 1), -1), got = want;
    ASSERT_EQ(PMPI_Alltoallv(sbuf.data(), sl.counts.data(), sl.displs.data(), st, want.data(), rl.counts.data(),
                             rl.displs.data(), rt, MPI_COMM_WORLD),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Alltoallv(sbuf.data(), sl.counts.data(), sl.displs.data(), st, got.data(), rl.counts.data(),
                            rl.displs.data(), rt, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(got, want) << "round " << round;
  }
  MPI_Type_free(&pairs);
  MPI_Type_free(&vec);
  MPI_Type_free(&two);
}

TEST(Collectives, NeighborAlltoallvOnARing) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm ring = dtmpi::testing::ring_graph();
  ASSERT_NE(ring, MPI_COMM_NULL);
  MPI_Datatype col;  // one int of every 4
  MPI_Type_vector(3, 1, 4, MPI_INT, &col);
  MPI_Datatype col_r;
  MPI_Type_create_resized(col, 0, sizeof(int), &col_r);  // consecutive columns
  MPI_Type_commit(&col_r);
  std::vector<int> sbuf(64), want(64, -1), got(64, -1);
  for (int i = 0; i < 64; ++i) sbuf[static_cast<size_t>(i)] = me * 100 + i;
  // 2 columns each way (with 2 ranks both neighbours are one process: counts must pair up)
  const int sc[2] = {2, 2}, sd[2] = {0, 3}, rc[2] = {2, 2}, rd[2] = {0, 2};  // receive pieces must not overlap
  ASSERT_EQ(PMPI_Neighbor_alltoallv(sbuf.data(), sc, sd, col_r, want.data(), rc, rd, col_r, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_alltoallv(sbuf.data(), sc, sd, col_r, got.data(), rc, rd, col_r, ring), MPI_SUCCESS);
  EXPECT_EQ(got, want);
  MPI_Type_free(&col_r);
  MPI_Type_free(&col);
  MPI_Comm_free(&ring);
}

// The w forms: a different type per peer (strided, contiguous, named), byte
// displacements, some zero counts; and the neighborhood w form on a ring.
TEST(Collectives, AlltoallwAndNeighborAlltoallw) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Datatype vec, pairs, two;
  MPI_Type_vector(1, 2, 3, MPI_DOUBLE, &vec);
  MPI_Type_create_resized(vec, 0, 3 * sizeof(double), &pairs);
  MPI_Type_commit(&pairs);
  MPI_Type_contiguous(2, MPI_DOUBLE, &two);
  MPI_Type_commit(&two);
  // every element is 2 doubles on the wire; types: pairs (3 doubles apart), two, or 2 x MPI_DOUBLE
  auto type_for = [&](int from, int to, bool send) {
    const int k = (from + 2 * to + (send ? 0 : 1)) % 3;
    return k == 0 ? pairs : k == 1 ? two : MPI_DOUBLE;
  };
  auto count_for = [&](int from, int to) { return (from + to) % 4 == 3 ? 0 : 3 + from + 2 * to; };
  std::vector<int> sc(static_cast<size_t>(n)), sd(static_cast<size_t>(n)), rc(static_cast<size_t>(n)),
      rd(static_cast<size_t>(n));
  std::vector<MPI_Datatype> st(static_cast<size_t>(n)), rt(static_cast<size_t>(n));
  int sat = 0, rat = 0;
  for (int i = 0; i < n; ++i) {
    st[static_cast<size_t>(i)] = type_for(me, i, true);
    rt[static_cast<size_t>(i)] = type_for(i, me, false);
    const int c = count_for(me, i), r = count_for(i, me);
    sc[static_cast<size_t>(i)] = st[static_cast<size_t>(i)] == MPI_DOUBLE ? 2 * c : c;
    rc[static_cast<size_t>(i)] = rt[static_cast<size_t>(i)] == MPI_DOUBLE ? 2 * r : r;
    sd[static_cast<size_t>(i)] = sat;
    rd[static_cast<size_t>(i)] = rat;
    sat += (3 * c + 2) * static_cast<int>(sizeof(double));
    rat += (3 * r + 1) * static_cast<int>(sizeof(double));
  }
  std::vector<double> sbuf(static_cast<size_t>(sat / 8)), want(static_cast<size_t>(rat / 8), -1), got = want;
  for (size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = me * 1e5 + static_cast<double>(i);
  ASSERT_EQ(PMPI_Alltoallw(sbuf.data(), sc.data(), sd.data(), st.data(), want.data(), rc.data(), rd.data(), rt.data(),
                           MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Alltoallw(sbuf.data(), sc.data(), sd.data(), st.data(), got.data(), rc.data(), rd.data(), rt.data(),
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(got, want);
  // neighbor w form on a ring: left gets `pairs`, right gets `two`
  MPI_Comm ring = dtmpi::testing::ring_graph();
  ASSERT_NE(ring, MPI_COMM_NULL);
  const int c2[2] = {4, 4};
  const MPI_Aint s2[2] = {0, 40 * 8}, r2[2] = {8, 30 * 8};
  const MPI_Datatype nst[2] = {pairs, two}, nrt[2] = {two, pairs};
  std::vector<double> nsbuf(64), nwant(80, -1), ngot(80, -1);
  for (size_t i = 0; i < nsbuf.size(); ++i) nsbuf[i] = me * 1e5 + static_cast<double>(i);
  ASSERT_EQ(PMPI_Neighbor_alltoallw(nsbuf.data(), c2, s2, nst, nwant.data(), c2, r2, nrt, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_alltoallw(nsbuf.data(), c2, s2, nst, ngot.data(), c2, r2, nrt, ring), MPI_SUCCESS);
  EXPECT_EQ(ngot, nwant);
  MPI_Comm_free(&ring);
  MPI_Type_free(&pairs);
  MPI_Type_free(&vec);
  MPI_Type_free(&two);
}

// Pieces of transport::kMultiMin bytes and more are "sent in place" (on GPUs:
// read by the receiver where they lie; in the host test mode the receiver asks
// for them and they are sent from where they lie): the protocol, its requests
// and its fallback against the system MPI, over several rounds.
TEST(Collectives, LargePiecesSentInPlace) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Datatype vec, pairs;
  MPI_Type_vector(1, 2, 3, MPI_DOUBLE, &vec);
  MPI_Type_create_resized(vec, 0, 3 * sizeof(double), &pairs);
  MPI_Type_commit(&pairs);
  MPI_Comm ring = dtmpi::testing::ring_graph();
  ASSERT_NE(ring, MPI_COMM_NULL);
  for (int round = 0; round < 3; ++round) {
    // 4100+ pairs = 65,600+ bytes a piece; one small piece per rank in round 1
    auto count_for = [&](int from, int to) { return round == 1 && from == to ? 7 : 4100 + 37 * from + 11 * to + round; };
    std::vector<int> sc(static_cast<size_t>(n)), sd(static_cast<size_t>(n)), rc(static_cast<size_t>(n)),
        rd(static_cast<size_t>(n));
    int sat = 0, rat = 0;
    for (int i = 0; i < n; ++i) {
      sc[static_cast<size_t>(i)] = count_for(me, i);
      rc[static_cast<size_t>(i)] = count_for(i, me);
      sd[static_cast<size_t>(i)] = sat;
      rd[static_cast<size_t>(i)] = rat;
      sat += sc[static_cast<size_t>(i)] + 2;
      rat += rc[static_cast<size_t>(i)] + 1;
    }
    std::vector<double> sbuf(static_cast<size_t>(3 * sat)), want(static_cast<size_t>(3 * rat), -1), got = want;
    for (size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = me * 1e7 + round * 1e6 + static_cast<double>(i);
    ASSERT_EQ(PMPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), pairs, want.data(), rc.data(), rd.data(), pairs,
                             MPI_COMM_WORLD),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), pairs, got.data(), rc.data(), rd.data(), pairs,
                            MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(got, want) << "alltoallv round " << round;
    // the neighborhood form (equal counts: with 2 ranks piece k pairs with
    // piece k, with more the left piece with the right one)
    const int c2[2] = {4200 + round, 4200 + round}, s2[2] = {0, 5100}, r2[2] = {3, 5200};
    std::vector<double> nsbuf(3 * 9400), nwant(3 * 9600, -1), ngot = nwant;
    for (size_t i = 0; i < nsbuf.size(); ++i) nsbuf[i] = me * 1e7 + round * 1e6 + static_cast<double>(i);
    ASSERT_EQ(PMPI_Neighbor_alltoallv(nsbuf.data(), c2, s2, pairs, nwant.data(), c2, r2, pairs, ring), MPI_SUCCESS);
    ASSERT_EQ(MPI_Neighbor_alltoallv(nsbuf.data(), c2, s2, pairs, ngot.data(), c2, r2, pairs, ring), MPI_SUCCESS);
    EXPECT_EQ(ngot, nwant) << "neighbor_alltoallv round " << round;
  }
  MPI_Comm_free(&ring);
  MPI_Type_free(&pairs);
  MPI_Type_free(&vec);
  if (std::getenv("DTMPI_TEST_STAGE_HOST") && !std::getenv("DTMPI_METHOD")) {
    const std::string s = dtmpi_stats();  // "multi-message sends N (M in place)"
    const size_t end = s.find(" in place)"), open = s.rfind('(', end);
    ASSERT_NE(end, std::string::npos) << s;
    EXPECT_GT(std::atol(s.substr(open + 1, end - open - 1).c_str()), 0) << s;
  }
}

// The exchanges above went through dtmpi's staging (not straight to the system MPI).
TEST(Collectives, StagingPathWasTaken) {
  const std::string s = dtmpi_stats();
  const auto at = s.find("staged collectives ");
  ASSERT_NE(at, std::string::npos) << s;
  EXPECT_GE(std::strtoull(s.c_str() + at + 19, nullptr, 10), 9u) << s;
  // in the host test mode (a job where GPU buffers may appear) the blocking
  // v, w and neighborhood forms exchange point to point through dtmpi
  const auto p2p = s.find("point-to-point collectives ");
  ASSERT_NE(p2p, std::string::npos) << s;
  EXPECT_GE(std::strtoull(s.c_str() + p2p + 27, nullptr, 10), 5u) << s;
}
