// Placement through MPI_Dist_graph_create(_adjacent) with reorder = 1, on
// nodes emulated by DTMPI_RANKS_PER_NODE=2 (4 ranks: 2 nodes). The graph pairs
// vertex v heavily with v^2 and lightly with v^1, so the default placement
// (consecutive ranks together) puts every heavy edge between nodes; after
// reordering each emulated node must play a heavy pair. The renumbered
// communicator must be consistent everywhere: Comm_rank, the neighbor lists
// of the vertex a process plays, and a neighborhood collective.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "common/mpi_world.hpp"

namespace {

using dtmpi::testing::world_rank;

// Out-lists of vertex v (the same lists are its in-lists: symmetric graph).
void adjacency(int v, std::vector<int>& nb, std::vector<int>& w) {
  nb = {v ^ 2, v ^ 1};
  w = {100, 1};
}

// Checks the renumbered communicator: neighbors equal the vertex's lists and
// a neighbor all-to-all delivers every neighbor's rank.
void check_graph(MPI_Comm g, bool weighted) {
  int me = 0;
  MPI_Comm_rank(g, &me);
  std::vector<int> nb, w;
  adjacency(me, nb, w);
  int in = 0, out = 0, is_weighted = 0;
  MPI_Dist_graph_neighbors_count(g, &in, &out, &is_weighted);
  ASSERT_EQ(in, 2);
  ASSERT_EQ(out, 2);
  EXPECT_EQ(is_weighted != 0, weighted);
  std::vector<int> src(2), srcw(2), dst(2), dstw(2);
  MPI_Dist_graph_neighbors(g, 2, src.data(), weighted ? srcw.data() : MPI_UNWEIGHTED, 2, dst.data(),
                           weighted ? dstw.data() : MPI_UNWEIGHTED);
  EXPECT_EQ(dst, nb);
  if (weighted) {
    EXPECT_EQ(dstw, w);
  }
  std::vector<int> sorted_src = src, sorted_nb = nb;
  std::sort(sorted_src.begin(), sorted_src.end());
  std::sort(sorted_nb.begin(), sorted_nb.end());
  EXPECT_EQ(sorted_src, sorted_nb);
  std::vector<int> sendv(2, me), recvv(2, -1);
  ASSERT_EQ(MPI_Neighbor_alltoall(sendv.data(), 1, MPI_INT, recvv.data(), 1, MPI_INT, g), MPI_SUCCESS);
  EXPECT_EQ(recvv, src);  // each in-neighbor sent its own rank
}

}  // namespace

TEST(Placement, AdjacentReorderPutsHeavyPairsOnOneNode) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 4) GTEST_SKIP() << "needs 4 ranks";
  const char* rpn = std::getenv("DTMPI_RANKS_PER_NODE");
  ASSERT_TRUE(rpn && std::atoi(rpn) == 2) << "run with DTMPI_RANKS_PER_NODE=2";
  const int me = world_rank();
  std::vector<int> nb, w;
  adjacency(me, nb, w);
  MPI_Comm g;
  ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb.data(), w.data(), 2, nb.data(), w.data(),
                                           MPI_INFO_NULL, 1, &g),
            MPI_SUCCESS);
  int v = -1;
  MPI_Comm_rank(g, &v);
  // which vertices each emulated node plays
  std::vector<int> vs(4);
  MPI_Allgather(&v, 1, MPI_INT, vs.data(), 1, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(vs[0] ^ 2, vs[1]) << "node 0 plays " << vs[0] << "," << vs[1];
  EXPECT_EQ(vs[2] ^ 2, vs[3]) << "node 1 plays " << vs[2] << "," << vs[3];
  check_graph(g, true);
  MPI_Comm_free(&g);
}

TEST(Placement, GeneralFormAndUnweighted) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 4) GTEST_SKIP() << "needs 4 ranks";
  const int me = world_rank();
  // rank 0 declares every edge of the graph; the others declare none
  std::vector<int> srcs, degs, dsts, ws;
  if (me == 0)
    for (int v = 0; v < 4; ++v) {
      std::vector<int> nb, w;
      adjacency(v, nb, w);
      srcs.push_back(v);
      degs.push_back(2);
      dsts.insert(dsts.end(), nb.begin(), nb.end());
      ws.insert(ws.end(), w.begin(), w.end());
    }
  MPI_Comm g;
  ASSERT_EQ(MPI_Dist_graph_create(MPI_COMM_WORLD, static_cast<int>(srcs.size()), srcs.data(), degs.data(), dsts.data(),
                                  me == 0 ? ws.data() : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 1, &g),
            MPI_SUCCESS);
  int v = -1;
  MPI_Comm_rank(g, &v);
  std::vector<int> vs(4);
  MPI_Allgather(&v, 1, MPI_INT, vs.data(), 1, MPI_INT, MPI_COMM_WORLD);
  EXPECT_EQ(vs[0] ^ 2, vs[1]);
  int in = 0, out = 0, weighted = 0;
  MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted);
  EXPECT_EQ(in, 2);
  EXPECT_EQ(out, 2);
  MPI_Comm_free(&g);
  // unweighted adjacent form with an isolated vertex and a self edge
  std::vector<int> nb;
  if (me == 1) nb = {1};             // self edge
  if (me == 0 || me == 2) nb = {me ^ 2};
  // vertex 3: no neighbors at all
  ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(nb.size()), nb.data(), MPI_UNWEIGHTED,
                                           static_cast<int>(nb.size()), nb.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 1,
                                           &g),
            MPI_SUCCESS);
  MPI_Comm_rank(g, &v);
  MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted);
  EXPECT_FALSE(weighted);
  const int expect = v == 3 ? 0 : 1;
  EXPECT_EQ(in, expect);
  EXPECT_EQ(out, expect);
  if (expect) {
    int s = -1, d = -1;
    MPI_Dist_graph_neighbors(g, 1, &s, MPI_UNWEIGHTED, 1, &d, MPI_UNWEIGHTED);
    EXPECT_EQ(d, v == 1 ? 1 : v ^ 2);
    int sendv = v, recvv = -1;
    ASSERT_EQ(MPI_Neighbor_alltoall(&sendv, 1, MPI_INT, &recvv, 1, MPI_INT, g), MPI_SUCCESS);
    EXPECT_EQ(recvv, s);
  }
  std::vector<int> all(4);
  MPI_Allgather(&v, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int>{0, 1, 2, 3}));  // a permutation
  MPI_Comm_free(&g);
}
