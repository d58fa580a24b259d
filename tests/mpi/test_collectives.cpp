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
  const int nb[2] = {(me + n - 1) % n, (me + 1) % n};
  MPI_Comm ring;
  ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, MPI_UNWEIGHTED, 2, nb, MPI_UNWEIGHTED,
                                           MPI_INFO_NULL, 0, &ring),
            MPI_SUCCESS);
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

// The exchanges above went through dtmpi's staging (not straight to the system MPI).
TEST(Collectives, StagingPathWasTaken) {
  const std::string s = dtmpi_stats();
  const auto at = s.find("staged collectives ");
  ASSERT_NE(at, std::string::npos) << s;
  EXPECT_GE(std::strtoull(s.c_str() + at + 19, nullptr, 10), 7u) << s;
}
