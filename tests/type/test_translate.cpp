// Translation of MPI datatypes: the digest's cases (different constructions of
// one region give one plan; the pitfall cases pack exactly like the system MPI).
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <string>
#include <vector>

#include "common/pack_check.hpp"
#include "type/translate.hpp"

using dtmpi::type::build_plan;
using dtmpi::type::StridedPlan;

namespace {

std::mt19937_64 g_rng(7);

// Every count in {1,2,3} packs and unpacks like MPI; returns the count-1 plan.
dtmpi::type::PackPlan expect_like_mpi(MPI_Datatype t) {
  for (int count = 1; count <= 3; ++count) {
    auto r = dtmpi::testing::check_against_mpi(t, count, g_rng);
    EXPECT_TRUE(r.planned) << r.plan_text;
    EXPECT_EQ(r.mismatch, "") << "count " << count << " plan " << r.plan_text;
  }
  auto b = build_plan(t);
  EXPECT_TRUE(b);
  return b ? b.value().plan : dtmpi::type::PackPlan{};
}

bool same_strided(const StridedPlan& a, const StridedPlan& b) {
  if (a.offset != b.offset || a.block != b.block || a.ndims != b.ndims) return false;
  for (int d = 0; d < a.ndims; ++d)
    if (a.dims[d].count != b.dims[d].count || a.dims[d].stride != b.dims[d].stride) return false;
  return true;
}

struct Owned {
  MPI_Datatype t;
  explicit Owned(MPI_Datatype x) : t(x) { MPI_Type_commit(&t); }
  ~Owned() { MPI_Type_free(&t); }
};

}  // namespace

TEST(Translate, EightConstructionsOfOneLayoutGiveOnePlan) {
  // 8 blocks of 2 doubles at a 512 B pitch (digest E-J6)
  std::vector<MPI_Datatype> ts(8);
  int bl[8], di[8];
  MPI_Aint hd[8];
  MPI_Datatype tys[8];
  for (int i = 0; i < 8; ++i) bl[i] = 2, di[i] = 64 * i, hd[i] = 512 * i, tys[i] = MPI_DOUBLE;
  MPI_Type_vector(8, 2, 64, MPI_DOUBLE, &ts[0]);
  MPI_Type_create_hvector(8, 2, 512, MPI_DOUBLE, &ts[1]);
  MPI_Type_indexed(8, bl, di, MPI_DOUBLE, &ts[2]);
  MPI_Type_create_indexed_block(8, 2, di, MPI_DOUBLE, &ts[3]);
  MPI_Type_create_hindexed(8, bl, hd, MPI_DOUBLE, &ts[4]);
  MPI_Type_create_hindexed_block(8, 2, hd, MPI_DOUBLE, &ts[5]);
  MPI_Type_create_struct(8, bl, hd, tys, &ts[6]);
  int sizes[2] = {8, 64}, subs[2] = {8, 2}, starts[2] = {0, 0};
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &ts[7]);
  std::vector<dtmpi::type::PackPlan> plans;
  for (auto& t : ts) {
    MPI_Type_commit(&t);
    plans.push_back(expect_like_mpi(t));
  }
  for (auto& p : plans) {
    ASSERT_TRUE(p.is_strided());
    EXPECT_TRUE(same_strided(p.strided(), plans[0].strided()));
    EXPECT_EQ(p.strided().block, 16);
  }
  EXPECT_EQ(plans[0].extent, 3600);  // vector: ends at the last block
  EXPECT_EQ(plans[7].extent, 4096);  // subarray: the whole array
  for (auto& t : ts) MPI_Type_free(&t);
}

TEST(Translate, SubarrayKeepsOffsetOfElidedLevel) {
  int sizes[3] = {4, 8, 4}, subs[3] = {1, 3, 2}, starts[3] = {2, 1, 0};
  MPI_Datatype t;
  MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
  Owned o(t);
  auto p = expect_like_mpi(o.t);
  ASSERT_TRUE(p.is_strided());
  EXPECT_EQ(p.strided().offset, 544);
  EXPECT_EQ(p.extent, 1024);
}

TEST(Translate, RowsOfColumnsAndColumnsOfRowsKeepTheirOrder) {
  MPI_Datatype c13, inner, rows, cols;
  MPI_Type_contiguous(13, MPI_BYTE, &c13);
  MPI_Type_create_hvector(3, 1, 16, c13, &inner);
  MPI_Type_create_hvector(5, 1, 53, inner, &rows);
  MPI_Type_free(&inner);
  MPI_Type_create_hvector(5, 1, 53, c13, &inner);
  MPI_Type_create_hvector(3, 1, 16, inner, &cols);
  MPI_Type_free(&inner);
  MPI_Type_free(&c13);
  Owned r(rows), c(cols);
  auto pr = expect_like_mpi(r.t), pc = expect_like_mpi(c.t);
  EXPECT_FALSE(same_strided(pr.strided(), pc.strided()));
  EXPECT_EQ(pr.strided().dims[0].stride, 16);
  EXPECT_EQ(pc.strided().dims[0].stride, 53);
}

TEST(Translate, VectorAndSubarrayExtentsDifferWithCount) {
  // X-Z face of a 4^3 double array (digest E-J8/H3): same bytes at count 1,
  // different at count 2 because the extents differ (416 vs 512)
  MPI_Datatype v, s;
  MPI_Type_vector(4, 4, 16, MPI_DOUBLE, &v);
  int sizes[3] = {4, 4, 4}, subs[3] = {4, 1, 4}, starts[3] = {0, 0, 0};
  MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &s);
  Owned ov(v), os(s);
  auto pv = expect_like_mpi(ov.t), ps = expect_like_mpi(os.t);
  EXPECT_EQ(pv.extent, 416);
  EXPECT_EQ(ps.extent, 512);
  EXPECT_TRUE(same_strided(pv.strided(), ps.strided()));
}

TEST(Translate, SubarrayFortranOrderAndStarts) {
  int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
  MPI_Datatype c, f;
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &c);
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &f);
  Owned oc(c), of(f);
  EXPECT_EQ(expect_like_mpi(oc.t).strided().offset, 64);
  EXPECT_EQ(expect_like_mpi(of.t).strided().offset, 72);
}

TEST(Translate, NegativeStrideAndResizedElements) {
  MPI_Datatype v, r, c;
  MPI_Type_vector(3, 1, -2, MPI_DOUBLE, &v);
  Owned ov(v);
  auto p = expect_like_mpi(ov.t);
  EXPECT_EQ(p.lb, -32);
  EXPECT_EQ(p.strided().dims[0].stride, -16);
  MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &r);
  MPI_Type_contiguous(3, r, &c);
  MPI_Type_free(&r);
  Owned oc(c);
  auto pc = expect_like_mpi(oc.t);
  EXPECT_EQ(pc.strided().dims[0].stride, 16);
  EXPECT_EQ(pc.extent, 48);
}

TEST(Translate, IrregularIndexedIsACompactBlockList) {
  int bl[4] = {2, 0, 3, 1}, di[4] = {10, 0, 20, 5};
  MPI_Datatype t;
  MPI_Type_indexed(4, bl, di, MPI_DOUBLE, &t);
  Owned o(t);
  auto p = expect_like_mpi(o.t);
  ASSERT_FALSE(p.is_strided());
  EXPECT_EQ(p.irregular().pieces.size(), 3u);
  EXPECT_EQ(p.lb, 40);
}

TEST(Translate, PairTypesAndStructPadding) {
  for (MPI_Datatype pair : {MPI_DOUBLE_INT, MPI_SHORT_INT, MPI_LONG_INT, MPI_FLOAT_INT, MPI_2INT}) {
    MPI_Datatype t;
    MPI_Type_contiguous(5, pair, &t);
    Owned o(t);
    expect_like_mpi(o.t);
  }
  int bl[3] = {1, 2, 1};
  MPI_Aint d[3] = {0, 8, 16};
  MPI_Datatype ty[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR}, s;
  MPI_Type_create_struct(3, bl, d, ty, &s);
  Owned os(s);
  auto p = expect_like_mpi(os.t);
  EXPECT_EQ(p.size, 17);
}

TEST(Translate, DarrayBlockAndCyclic) {
  int g[2] = {10, 12}, dist[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
  int darg[2] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 3};
  for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
    for (int rank = 0; rank < 6; ++rank) {
      MPI_Datatype t;
      MPI_Type_create_darray(6, rank, 2, g, dist, darg, ps, order, MPI_INT, &t);
      Owned o(t);
      expect_like_mpi(o.t);
    }
  }
}

// Cyclic dimensions are described as groups of runs (whole runs at one step,
// then a shorter last run): every distribution, partial last runs, ranks that
// own nothing, resized elements.
TEST(Translate, DarrayEveryDistributionAndRank) {
  const int B = MPI_DISTRIBUTE_BLOCK, C = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE, D = MPI_DISTRIBUTE_DFLT_DARG;
  struct Dim {
    int dist, darg;
  };
  const Dim dims[] = {{B, D}, {B, 3}, {C, D}, {C, 2}, {C, 3}, {N, D}};
  MPI_Datatype wide;
  MPI_Type_create_resized(MPI_SHORT, 0, 6, &wide);
  int cases = 0;
  for (const Dim& a : dims) {
    for (const Dim& b : dims) {
      int g[3] = {5, 11, 7}, dist[3] = {a.dist, b.dist, C}, darg[3] = {a.darg, b.darg, 4};
      int ps[3] = {a.dist == N ? 1 : 4, b.dist == N ? 1 : 2, 2};
      if ((a.dist == B && a.darg == 3 && 3 * ps[0] < g[0]) || (b.dist == B && b.darg == 3 && 3 * ps[1] < g[1]))
        continue;  // a block size too small to cover the dimension: erroneous
      const int procs = ps[0] * ps[1] * ps[2];
      for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
        for (int rank = 0; rank < procs; ++rank) {
          MPI_Datatype t;
          MPI_Type_create_darray(procs, rank, 3, g, dist, darg, ps, order, rank % 2 ? wide : MPI_INT, &t);
          Owned o(t);
          SCOPED_TRACE("case " + std::to_string(cases) + " rank " + std::to_string(rank));
          expect_like_mpi(o.t);
        }
        ++cases;
      }
    }
  }
  MPI_Type_free(&wide);
  EXPECT_GT(cases, 40);
}

TEST(Translate, HaloFaceIsThreeDimensional) {
  int gs[4] = {262, 262, 262, 8}, ss[4] = {256, 256, 3, 8}, s0[4] = {3, 3, 3, 0};
  MPI_Datatype t;
  MPI_Type_create_subarray(4, gs, ss, s0, MPI_ORDER_C, MPI_DOUBLE, &t);
  Owned o(t);
  auto b = build_plan(o.t);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b.value().plan.is_strided());
  EXPECT_EQ(b.value().plan.strided().ndims, 2);  // 3 cells x 8 doubles fold into one block
  EXPECT_EQ(b.value().plan.strided().block, 3 * 8 * 8);
}
