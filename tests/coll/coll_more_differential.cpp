// dtmpi's Allgather, Alltoall, Gather, Scatter, Reduce_scatter_block, Scan
// and Exscan (src/coll) against the system MPI's result on the same input:
// MPI_* through dtmpi, PMPI_* straight to the system MPI, byte for byte
// (whole receive buffers, gaps of non-contiguous types included). CTest runs
// it once per DTMPI_COLL setting (every algorithm forced, a small scratch for
// chunks) on 1-4 ranks; random counts (0, small, past a scratch slot), types
// (contiguous, derived, send and receive types that differ), roots,
// MPI_IN_PLACE, blocking and non-blocking, on the world, halves of odd sizes
// and the world reversed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll_move_common.hpp"

namespace {

using namespace coll_test;

enum class Kind { kAllgather, kAlltoall, kGather, kScatter };

// One call of `kind` through dtmpi (mine) or the system MPI (ref).
int call(Kind kind, bool sys, bool nb, const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
         int root, MPI_Comm comm) {
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Request* q = nb ? &r : nullptr;
  int code = MPI_SUCCESS;
  switch (kind) {
    case Kind::kAllgather:
      code = sys ? PMPI_Allgather(sb, sc, st, rb, rc, rt, comm)
                 : q ? MPI_Iallgather(sb, sc, st, rb, rc, rt, comm, q) : MPI_Allgather(sb, sc, st, rb, rc, rt, comm);
      break;
    case Kind::kAlltoall:
      code = sys ? PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm)
                 : q ? MPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, q) : MPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
      break;
    case Kind::kGather:
      code = sys ? PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm)
                 : q ? MPI_Igather(sb, sc, st, rb, rc, rt, root, comm, q)
                     : MPI_Gather(sb, sc, st, rb, rc, rt, root, comm);
      break;
    case Kind::kScatter:
      code = sys ? PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm)
                 : q ? MPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, q)
                     : MPI_Scatter(sb, sc, st, rb, rc, rt, root, comm);
      break;
  }
  if (code == MPI_SUCCESS && q) code = MPI_Wait(q, MPI_STATUS_IGNORE);
  return code;
}

void moves_match(Kind kind) {
  static const char* kNames[] = {"allgather", "alltoall", "gather", "scatter"};
  ServedCheck served{kNames[static_cast<int>(kind)]};
  Types types;
  auto cs = comms();
  for (MPI_Comm comm : cs) {
    int me = 0, n = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    auto rng = shared_rng(comm, 10 + static_cast<unsigned>(kind));
    for (int it = 0, its = iterations(); it < its; ++it) {
      const Pair& p = types.pairs[rng() % types.pairs.size()];
      const int64_t count = random_count(it, rng);
      const int root = static_cast<int>(rng() % static_cast<unsigned>(n));
      const bool in_place = rng() % 3 == 0, nb = it % 4 == 1;
      const bool is_root = me == root;
      const int sc = static_cast<int>(count * p.sk), rc = static_cast<int>(count * p.rk);
      // blocks on each side: the send side holds n of them for alltoall and
      // a scatter's root, the receive side for allgather, alltoall and a gather's root
      const bool rooted = kind == Kind::kGather || kind == Kind::kScatter;
      const int sblocks = kind == Kind::kAlltoall || (kind == Kind::kScatter && is_root) ? n : 1;
      const int rblocks = kind == Kind::kAllgather || kind == Kind::kAlltoall || (kind == Kind::kGather && is_root) ? n : 1;
      std::mt19937 local(rng() + static_cast<unsigned>(me) * 7919u);
      std::vector<char> send = random_bytes(static_cast<size_t>(sblocks * sc * extent_of(p.st) + 64), local);
      std::vector<char> mine = random_bytes(static_cast<size_t>(rblocks * rc * extent_of(p.rt) + 64), local);
      std::vector<char> ref = mine;
      // MPI_IN_PLACE: the send buffer of allgather, alltoall and a gather's
      // root; the receive buffer of a scatter's root
      const bool send_in_place = in_place && (!rooted || (kind == Kind::kGather && is_root));
      const bool recv_in_place = in_place && kind == Kind::kScatter && is_root;
      for (int sys = 0; sys < 2; ++sys) {
        std::vector<char>& out = sys ? ref : mine;
        const int code = call(kind, sys != 0, nb && !sys, send_in_place ? MPI_IN_PLACE : send.data(), sc, p.st,
                              recv_in_place ? MPI_IN_PLACE : out.data(), rc, p.rt, root, comm);
        ASSERT_EQ(code, MPI_SUCCESS);
      }
      const bool result_here = kind != Kind::kGather || is_root;
      if (result_here && !recv_in_place) {
        EXPECT_EQ(0, std::memcmp(mine.data(), ref.data(), mine.size()))
            << "pair " << (&p - types.pairs.data()) << " count " << count << " root " << root << " in place "
            << in_place << (nb ? " non-blocking" : "") << " on " << n << " ranks";
      }
    }
  }
  free_comms(cs);
}

TEST(CollMore, AllgatherMatchesSystem) { moves_match(Kind::kAllgather); }
TEST(CollMore, AlltoallMatchesSystem) { moves_match(Kind::kAlltoall); }
TEST(CollMore, GatherMatchesSystem) { moves_match(Kind::kGather); }
TEST(CollMore, ScatterMatchesSystem) { moves_match(Kind::kScatter); }

enum class RKind { kReduceScatterBlock, kScan, kExscan, kReduceScatter };

int rcall(RKind kind, bool sys, bool nb, const void* sb, void* rb, int count, const int* counts, MPI_Datatype t,
          MPI_Op op, MPI_Comm comm) {
  MPI_Request r = MPI_REQUEST_NULL;
  int code = MPI_SUCCESS;
  switch (kind) {
    case RKind::kReduceScatter:
      code = sys  ? PMPI_Reduce_scatter(sb, rb, counts, t, op, comm)
             : nb ? MPI_Ireduce_scatter(sb, rb, counts, t, op, comm, &r)
                  : MPI_Reduce_scatter(sb, rb, counts, t, op, comm);
      break;
    case RKind::kReduceScatterBlock:
      code = sys  ? PMPI_Reduce_scatter_block(sb, rb, count, t, op, comm)
             : nb ? MPI_Ireduce_scatter_block(sb, rb, count, t, op, comm, &r)
                  : MPI_Reduce_scatter_block(sb, rb, count, t, op, comm);
      break;
    case RKind::kScan:
      code = sys ? PMPI_Scan(sb, rb, count, t, op, comm) : nb ? MPI_Iscan(sb, rb, count, t, op, comm, &r)
                                                               : MPI_Scan(sb, rb, count, t, op, comm);
      break;
    case RKind::kExscan:
      code = sys ? PMPI_Exscan(sb, rb, count, t, op, comm) : nb ? MPI_Iexscan(sb, rb, count, t, op, comm, &r)
                                                                 : MPI_Exscan(sb, rb, count, t, op, comm);
      break;
  }
  if (code == MPI_SUCCESS && nb && !sys) code = MPI_Wait(&r, MPI_STATUS_IGNORE);
  return code;
}

void prefix_reductions_match(RKind kind) {
  static const char* kNames[] = {"reduce_scatter_block", "scan", "exscan", "reduce_scatter"};
  ServedCheck served{kNames[static_cast<int>(kind)]};
  MPI_Datatype mat = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  MPI_Type_commit(&mat);
  MPI_Op noncommutative = MPI_OP_NULL;
  MPI_Op_create(matmul, 0, &noncommutative);
  const Reduction cases[] = {
      {{MPI_INT, 4, true}, MPI_SUM},        {{MPI_INT, 4, true}, MPI_PROD},   {{MPI_INT, 4, true}, MPI_MAX},
      {{MPI_DOUBLE, 8, false}, MPI_SUM},    {{MPI_DOUBLE, 8, false}, MPI_MIN}, {{MPI_FLOAT, 4, false}, MPI_SUM},
      {{MPI_LONG_LONG, 8, true}, MPI_BXOR}, {{MPI_2INT, 8, true}, MPI_MAXLOC}, {{mat, 16, true}, noncommutative},
      {{MPI_CHAR, 1, true}, MPI_BAND}};
  const int kCases = sizeof cases / sizeof cases[0];
  auto cs = comms();
  for (MPI_Comm comm : cs) {
    int me = 0, n = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    auto rng = shared_rng(comm, 20 + static_cast<unsigned>(kind));
    for (int it = 0, its = iterations(); it < its; ++it) {
      const Reduction& c = cases[it < kCases ? it : rng() % kCases];
      const int64_t count = it % 8 == 7 ? 3000 + rng() % 12000 : it % 8 == 3 ? 0 : 1 + rng() % 700;
      const bool in_place = rng() % 3 == 0, nb = it % 4 == 1;
      // Reduce_scatter: rank j's block its own size (zeros, small, `count`)
      std::vector<int> counts(static_cast<size_t>(n), static_cast<int>(count));
      if (kind == RKind::kReduceScatter)
        for (int& c : counts) c = rng() % 3 == 0 ? 0 : rng() % 2 ? static_cast<int>(count) : static_cast<int>(rng() % 50);
      int64_t total = 0;
      for (int c : counts) total += c;
      const int64_t in_count = kind == RKind::kReduceScatterBlock ? n * count
                               : kind == RKind::kReduceScatter    ? total
                                                                  : count;
      const int64_t out_count = kind == RKind::kReduceScatter ? counts[me] : count;
      std::mt19937 local(rng() + static_cast<unsigned>(me) * 104729u);
      std::vector<char> in, out, ref;
      fill(in, c.t, in_count, local);
      out.assign(in.size(), 7);
      if (in_place) out = in;
      ref = out;
      for (int sys = 0; sys < 2; ++sys) {
        std::vector<char>& o = sys ? ref : out;
        ASSERT_EQ(MPI_SUCCESS, rcall(kind, sys != 0, nb, in_place ? MPI_IN_PLACE : in.data(), o.data(),
                                     static_cast<int>(count), counts.data(), c.t.type, c.op, comm));
      }
      if (kind == RKind::kExscan && me == 0) continue;  // undefined there
      EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), static_cast<size_t>(out_count) * c.t.elem))
          << "case " << (&c - cases) << " count " << count << " in place " << in_place
          << (nb ? " non-blocking" : "") << " on " << n << " ranks";
    }
  }
  free_comms(cs);
  MPI_Op_free(&noncommutative);
  MPI_Type_free(&mat);
}

TEST(CollMore, ReduceScatterBlockMatchesSystem) { prefix_reductions_match(RKind::kReduceScatterBlock); }
TEST(CollMore, ScanMatchesSystem) { prefix_reductions_match(RKind::kScan); }
TEST(CollMore, ExscanMatchesSystem) { prefix_reductions_match(RKind::kExscan); }
TEST(CollMore, ReduceScatterMatchesSystem) { prefix_reductions_match(RKind::kReduceScatter); }

// Emulated nodes (DTMPI_RANKS_PER_NODE) with DTMPI_COLL naming an Alltoall
// algorithm: a blocking Alltoall on MPI_COMM_WORLD, which spans the nodes, is
// node-aggregated (coll/hierarchy.hpp) -- served by dtmpi, one call counted --
// and gives the system MPI's bytes; MPI_IN_PLACE too.
// The calls dtmpi exchanged point to point (dtmpi_stats()).
long long p2p_collectives() {
  const char* s = dtmpi_stats ? dtmpi_stats() : nullptr;
  const char* at = s ? std::strstr(s, "point-to-point collectives ") : nullptr;
  return at ? std::atoll(at + std::strlen("point-to-point collectives ")) : -1;
}

// Whether DTMPI_RANKS_PER_NODE emulates nodes of 2+ ranks and MPI_COMM_WORLD
// spans several; then `interleaved`: the same ranks with the even world ranks
// first (nodes interleaved: a node's ranks are not consecutive, a rank's place
// in its node is not its distance from the leader).
bool across_nodes(MPI_Comm& interleaved) {
  const char* rpn = std::getenv("DTMPI_RANKS_PER_NODE");
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int per_node = rpn ? std::atoi(rpn) : 0;
  if (per_node < 2 || n <= per_node) return false;
  return MPI_Comm_split(MPI_COMM_WORLD, 0, (me % 2) * n + me / 2, &interleaved) == MPI_SUCCESS;
}

TEST(CollMore, AlltoallAcrossNodesIsAggregated) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm interleaved = MPI_COMM_NULL;
  if (!coll_test::named("alltoall") || !across_nodes(interleaved)) GTEST_SKIP() << "needs emulated nodes of 2+ ranks";
  for (MPI_Comm comm : {MPI_COMM_WORLD, interleaved}) {
    int mine = 0;
    MPI_Comm_rank(comm, &mine);
    for (int count : {1, 5, 300}) {
      for (bool in_place : {false, true}) {
        const std::string what = std::string(comm == MPI_COMM_WORLD ? "world" : "interleaved") + ", count " +
                                 std::to_string(count) + (in_place ? ", in place" : "");
        std::vector<double> in(static_cast<size_t>(n * count)), want(in.size(), -1), got(in.size(), -1);
        for (size_t i = 0; i < in.size(); ++i) in[i] = mine * 100000 + static_cast<double>(i);
        EXPECT_EQ(PMPI_Alltoall(in.data(), count, MPI_DOUBLE, want.data(), count, MPI_DOUBLE, comm), MPI_SUCCESS);
        const long long before = served_by_dtmpi();
        if (in_place) {
          got = in;
          EXPECT_EQ(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), count, MPI_DOUBLE, comm), MPI_SUCCESS);
        } else {
          EXPECT_EQ(MPI_Alltoall(in.data(), count, MPI_DOUBLE, got.data(), count, MPI_DOUBLE, comm), MPI_SUCCESS);
        }
        EXPECT_EQ(served_by_dtmpi(), before + 1) << what;
        EXPECT_EQ(got, want) << what;
      }
    }
  }
  MPI_Comm_free(&interleaved);
}

// The same for Alltoallv (node-aggregated, its blocks' sizes gathered at the
// leaders): the block from rank i to rank j is (i + 2j) % 5 + count doubles
// (some empty), at gaps of 3 doubles; in place too.
TEST(CollMore, AlltoallvAcrossNodesIsAggregated) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm interleaved = MPI_COMM_NULL;
  if (!coll_test::named("alltoallv") || !across_nodes(interleaved)) GTEST_SKIP() << "needs emulated nodes of 2+ ranks";
  for (MPI_Comm comm : {MPI_COMM_WORLD, interleaved}) {
    int mine = 0;
    MPI_Comm_rank(comm, &mine);
    for (int count : {0, 2, 200}) {
      for (bool in_place : {false, true}) {
        const std::string what = std::string(comm == MPI_COMM_WORLD ? "world" : "interleaved") + ", count " +
                                 std::to_string(count) + (in_place ? ", in place" : "");
        auto block = [&](int i, int j) { return (i + 2 * j) % 5 + count; };
        // in place, the send blocks are the receive blocks: rank i's block for
        // j must then have the size j sends it (symmetric sizes)
        auto size = [&](int i, int j) { return in_place ? block(std::min(i, j), std::max(i, j)) : block(i, j); };
        std::vector<int> sc(static_cast<size_t>(n)), sd(sc.size()), rc(sc.size()), rd(sc.size());
        int send_at = 0, recv_at = 0;
        for (int j = 0; j < n; ++j) {
          sc[static_cast<size_t>(j)] = size(mine, j);
          sd[static_cast<size_t>(j)] = send_at;
          send_at += sc[static_cast<size_t>(j)] + 3;
          rc[static_cast<size_t>(j)] = size(j, mine);
          rd[static_cast<size_t>(j)] = recv_at;
          recv_at += rc[static_cast<size_t>(j)] + 3;
        }
        std::vector<double> in(static_cast<size_t>(send_at) + 1), want(static_cast<size_t>(recv_at) + 1, -1);
        for (size_t i = 0; i < in.size(); ++i) in[i] = mine * 100000 + static_cast<double>(i);
        std::vector<double> got = want;
        if (in_place) {
          for (size_t i = 0; i < want.size(); ++i) want[i] = got[i] = mine * 100000 + 0.5 + static_cast<double>(i);
          EXPECT_EQ(PMPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, want.data(), rc.data(),
                                   rd.data(), MPI_DOUBLE, comm), MPI_SUCCESS);
        } else {
          EXPECT_EQ(PMPI_Alltoallv(in.data(), sc.data(), sd.data(), MPI_DOUBLE, want.data(), rc.data(), rd.data(),
                                   MPI_DOUBLE, comm), MPI_SUCCESS);
        }
        const long long before = served_by_dtmpi(), routed = p2p_collectives();
        if (in_place) {
          EXPECT_EQ(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, got.data(), rc.data(), rd.data(),
                                  MPI_DOUBLE, comm), MPI_SUCCESS);
        } else {
          EXPECT_EQ(MPI_Alltoallv(in.data(), sc.data(), sd.data(), MPI_DOUBLE, got.data(), rc.data(), rd.data(),
                                  MPI_DOUBLE, comm), MPI_SUCCESS);
        }
        // count 0 with i + 2j = 0 mod 5 everywhere is not possible: some block
        // is non-empty. Where dtmpi's point-to-point route is possible (GPU
        // machines: interpose/coll_p2p.cpp), a blocking out-of-place
        // Alltoallv takes it before DTMPI_COLL's algorithms
        if (in_place || p2p_collectives() == routed) {
          EXPECT_EQ(served_by_dtmpi(), before + 1) << what;
        }
        EXPECT_EQ(got, want) << what;
      }
    }
  }
  MPI_Comm_free(&interleaved);
}

// Last: where DTMPI_COLL names an algorithm, dtmpi's served the calls above.
TEST(CollMore, ZzDtmpiServedWhereSelected) {
  const char* v = std::getenv("DTMPI_COLL");
  const bool selected = v && *v && std::string(v) != "system";
  const long long served = served_by_dtmpi();
  ASSERT_GE(served, 0) << "dtmpi is not in the process";
  if (selected)
    EXPECT_GT(served, 0) << "DTMPI_COLL=" << v << " but no collective ran dtmpi's algorithms";
  else
    EXPECT_EQ(served, 0);
}

}  // namespace
