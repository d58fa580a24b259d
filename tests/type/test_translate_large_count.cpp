// Translation of types built by the MPI-4 large-count constructors
// (MPI_Type_*_c): the engine must read them with MPI_Type_get_envelope_c /
// _contents_c (MPICH 4 aborts a program asking the classic calls), plan them
// exactly like the same types built the classic way, and either plan counts,
// strides and displacements past 2^31 correctly or leave the type to the
// system MPI. Skipped where the MPI has no large-count functions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <string>
#include <vector>

#include "common/pack_check.hpp"
#include "common/sparse_buffer.hpp"
#include "pack/cpu_pack.hpp"
#include "type/introspect.hpp"
#include "type/translate.hpp"

#ifndef DTMPI_HAVE_MPI_LARGE_COUNT

TEST(TranslateLargeCount, NeedsAnMpiWithLargeCounts) { GTEST_SKIP() << "this MPI has no MPI_Type_*_c functions"; }

#else

using dtmpi::testing::Block;
using dtmpi::type::build_plan;

namespace {

std::mt19937_64 g_rng(11);
constexpr MPI_Count k2G = MPI_Count{1} << 31;

MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

// `large` packs and unpacks like the system MPI for counts 1..3 and gets the
// plan of `classic`, the same type built by the classic constructor.
void expect_twins(const char* what, MPI_Datatype large, MPI_Datatype classic) {
  SCOPED_TRACE(what);
  for (int count = 1; count <= 3; ++count) {
    auto r = dtmpi::testing::check_against_mpi(large, count, g_rng);
    EXPECT_TRUE(r.planned) << r.plan_text;
    EXPECT_EQ(r.mismatch, "") << "count " << count << " plan " << r.plan_text;
  }
  auto a = build_plan(large), b = build_plan(classic);
  ASSERT_TRUE(a) << a.error().what;
  ASSERT_TRUE(b) << b.error().what;
  EXPECT_EQ(describe(a.value().plan), describe(b.value().plan));
  EXPECT_EQ(a.value().plan.size, b.value().plan.size);
  EXPECT_EQ(a.value().plan.lb, b.value().plan.lb);
  EXPECT_EQ(a.value().plan.extent, b.value().plan.extent);
}

}  // namespace

TEST(TranslateLargeCount, EveryConstructorPlansLikeItsClassicTwin) {
  struct Pair {
    const char* what;
    MPI_Datatype large, classic;
  };
  std::vector<Pair> pairs;
  auto add = [&](const char* what, MPI_Datatype l, MPI_Datatype c) {
    pairs.push_back({what, committed(l), committed(c)});
  };
  MPI_Datatype l, c;
  MPI_Type_contiguous_c(5, MPI_INT, &l), MPI_Type_contiguous(5, MPI_INT, &c), add("contiguous", l, c);
  MPI_Type_vector_c(3, 2, 5, MPI_DOUBLE, &l), MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &c), add("vector", l, c);
  MPI_Type_vector_c(4, 1, -3, MPI_INT, &l), MPI_Type_vector(4, 1, -3, MPI_INT, &c), add("vector -stride", l, c);
  MPI_Type_create_hvector_c(3, 2, 40, MPI_INT, &l), MPI_Type_create_hvector(3, 2, 40, MPI_INT, &c);
  add("hvector", l, c);
  const MPI_Count lbl[3] = {1, 0, 2}, ldi[3] = {0, 3, 7}, lhd[3] = {0, 24, 56};
  const int ibl[3] = {1, 0, 2}, idi[3] = {0, 3, 7};
  const MPI_Aint ahd[3] = {0, 24, 56};
  MPI_Type_indexed_c(3, lbl, ldi, MPI_DOUBLE, &l), MPI_Type_indexed(3, ibl, idi, MPI_DOUBLE, &c);
  add("indexed", l, c);
  MPI_Type_create_hindexed_c(3, lbl, lhd, MPI_DOUBLE, &l), MPI_Type_create_hindexed(3, ibl, ahd, MPI_DOUBLE, &c);
  add("hindexed", l, c);
  MPI_Type_create_indexed_block_c(3, 2, ldi, MPI_FLOAT, &l), MPI_Type_create_indexed_block(3, 2, idi, MPI_FLOAT, &c);
  add("indexed_block", l, c);
  MPI_Type_create_hindexed_block_c(3, 2, lhd, MPI_FLOAT, &l);
  MPI_Type_create_hindexed_block(3, 2, ahd, MPI_FLOAT, &c);
  add("hindexed_block", l, c);
  const MPI_Count sbl[3] = {1, 2, 3}, sdi[3] = {0, 8, 24};
  const int sibl[3] = {1, 2, 3};
  const MPI_Aint sadi[3] = {0, 8, 24};
  MPI_Datatype sty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct_c(3, sbl, sdi, sty, &l), MPI_Type_create_struct(3, sibl, sadi, sty, &c);
  add("struct", l, c);
  const MPI_Count lsz[3] = {4, 8, 6}, lsub[3] = {2, 3, 4}, lst[3] = {1, 2, 1};
  const int isz[3] = {4, 8, 6}, isub[3] = {2, 3, 4}, ist[3] = {1, 2, 1};
  for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
    MPI_Type_create_subarray_c(3, lsz, lsub, lst, order, MPI_DOUBLE, &l);
    MPI_Type_create_subarray(3, isz, isub, ist, order, MPI_DOUBLE, &c);
    add(order == MPI_ORDER_C ? "subarray C" : "subarray Fortran", l, c);
  }
  const MPI_Count lg[2] = {10, 12};
  const int ig[2] = {10, 12}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
            darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 3};
  for (int rank : {0, 4}) {
    MPI_Type_create_darray_c(6, rank, 2, lg, dist, darg, ps, MPI_ORDER_C, MPI_INT, &l);
    MPI_Type_create_darray(6, rank, 2, ig, dist, darg, ps, MPI_ORDER_C, MPI_INT, &c);
    add("darray", l, c);
  }
  MPI_Type_create_resized_c(MPI_INT, -4, 16, &l), MPI_Type_create_resized(MPI_INT, -4, 16, &c), add("resized", l, c);
  // nesting both ways: classic over large-count and large-count over classic
  MPI_Datatype lv, cv;
  MPI_Type_vector_c(3, 1, 4, MPI_INT, &lv), MPI_Type_vector(3, 1, 4, MPI_INT, &cv);
  MPI_Type_contiguous(2, lv, &l), MPI_Type_contiguous(2, cv, &c), add("contiguous of vector_c", l, c);
  MPI_Type_create_hvector_c(2, 1, 100, cv, &l), MPI_Type_create_hvector(2, 1, 100, cv, &c);
  add("hvector_c of vector", l, c);
  MPI_Type_dup(lv, &l), MPI_Type_dup(cv, &c), add("dup of vector_c", l, c);
  MPI_Type_free(&lv), MPI_Type_free(&cv);
  for (auto& p : pairs) {
    expect_twins(p.what, p.large, p.classic);
    MPI_Type_free(&p.large), MPI_Type_free(&p.classic);
  }
}

TEST(TranslateLargeCount, PredefinedAndDerivedAreTold) {
  MPI_Datatype v;
  MPI_Type_vector_c(2, 1, 3, MPI_INT, &v);
  EXPECT_TRUE(dtmpi::type::is_predefined(MPI_INT));
  EXPECT_TRUE(dtmpi::type::is_predefined(MPI_DOUBLE_INT));
  EXPECT_FALSE(dtmpi::type::is_predefined(v));
  EXPECT_FALSE(dtmpi::type::is_predefined(MPI_DATATYPE_NULL));
  MPI_Type_free(&v);
}

namespace {

struct Huge {
  const char* what;
  MPI_Datatype type;         // committed
  std::vector<Block> blocks; // the typemap, in pack order, from the MPI standard's definition
};

// Packs through the plan and through MPI from a sparse buffer holding a
// pattern in `blocks`; unpacks the pattern back through the plan.
void expect_huge_like_mpi(const Huge& h) {
  SCOPED_TRACE(h.what);
  auto b = build_plan(h.type);
  ASSERT_TRUE(b) << b.error().what;
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  MPI_Type_size_c(h.type, &size);
  MPI_Type_get_extent_c(h.type, &lb, &extent);
  MPI_Type_get_true_extent_c(h.type, &tlb, &textent);
  EXPECT_EQ(b.value().plan.size, size);
  EXPECT_EQ(b.value().plan.lb, lb);
  EXPECT_EQ(b.value().plan.extent, extent);
  const auto want = dtmpi::testing::packed_pattern(h.blocks);
  ASSERT_EQ(static_cast<int64_t>(want.size()), size);
  // the typemap's offsets [tlb, tlb + textent) land in [4096, 4096 + textent)
  dtmpi::testing::SparseBuffer src(textent + 8192), dst(textent + 8192);
  ASSERT_TRUE(src.ok() && dst.ok()) << "cannot map " << textent << " bytes";
  unsigned char* const from = src.data() + 4096 - tlb;
  unsigned char* const to = dst.data() + 4096 - tlb;
  dtmpi::testing::fill_blocks(from, h.blocks);
  std::vector<unsigned char> mpi(want.size()), ours(want.size());
  int pos = 0;
  ASSERT_EQ(PMPI_Pack(from, 1, h.type, mpi.data(), static_cast<int>(mpi.size()), &pos, MPI_COMM_SELF),
            MPI_SUCCESS);
  EXPECT_EQ(mpi, want) << "the test's typemap differs from the MPI's";
  dtmpi::pack::pack_host(b.value().plan, 1, from, ours.data());
  EXPECT_EQ(ours, want) << describe(b.value().plan);
  dtmpi::pack::unpack_host(b.value().plan, 1, want.data(), to);
  EXPECT_TRUE(dtmpi::testing::holds_pattern(to, h.blocks)) << describe(b.value().plan);
}

}  // namespace

TEST(TranslateLargeCount, StridesAndDisplacementsPast2To31) {
  std::vector<Huge> cases;
  MPI_Datatype t;
  // a stride of 2^31 + 24 elements
  MPI_Type_vector_c(3, 8, k2G + 24, MPI_BYTE, &t);
  cases.push_back({"vector_c", committed(t), {{0, 8}, {k2G + 24, 8}, {2 * (k2G + 24), 8}}});
  // a byte stride past 2^32, negative
  MPI_Type_create_hvector_c(2, 1, -(2 * k2G + 8), MPI_DOUBLE, &t);
  cases.push_back({"hvector_c negative", committed(t), {{0, 8}, {-(2 * k2G + 8), 8}}});
  const MPI_Count bl[2] = {2, 1}, di[2] = {k2G + 3, 1};
  MPI_Type_indexed_c(2, bl, di, MPI_SHORT, &t);
  cases.push_back({"indexed_c", committed(t), {{2 * (k2G + 3), 4}, {2, 2}}});
  const MPI_Count hd[2] = {16, 2 * k2G + 40};
  MPI_Type_create_hindexed_block_c(2, 3, hd, MPI_INT, &t);
  cases.push_back({"hindexed_block_c", committed(t), {{16, 12}, {2 * k2G + 40, 12}}});
  const MPI_Count sbl[2] = {1, 2}, sdi[2] = {0, 2 * k2G + 16};
  MPI_Datatype sty[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_create_struct_c(2, sbl, sdi, sty, &t);
  cases.push_back({"struct_c", committed(t), {{0, 4}, {2 * k2G + 16, 16}}});
  // rows of 2^31 + 64 bytes: rows 1 and 2, 16 bytes from column 2^31 + 8
  const MPI_Count sz[2] = {3, k2G + 64}, sub[2] = {2, 16}, st[2] = {1, k2G + 8};
  MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_BYTE, &t);
  cases.push_back({"subarray_c", committed(t), {{(k2G + 64) + k2G + 8, 16}, {2 * (k2G + 64) + k2G + 8, 16}}});
  for (auto& h : cases) {
    expect_huge_like_mpi(h);
    MPI_Type_free(&h.type);
  }
}

// Types of more than 2^31 bytes: planned with exact sizes, or left to the
// system MPI, never planned wrongly. (Not packed: that needs GiBs of memory.)
TEST(TranslateLargeCount, CountsPast2To31) {
  MPI_Datatype t;
  MPI_Type_contiguous_c(k2G + 8, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  auto b = build_plan(t);
  ASSERT_TRUE(b) << b.error().what;
  ASSERT_TRUE(b.value().plan.is_strided());
  EXPECT_EQ(b.value().plan.strided().block, k2G + 8);
  EXPECT_EQ(b.value().plan.strided().ndims, 0);
  EXPECT_EQ(b.value().plan.size, k2G + 8);
  MPI_Type_free(&t);

  // rank 1 of 2 owns the upper half of 2^32 + 32 bytes
  const MPI_Count g1[1] = {2 * k2G + 32};
  const int block[1] = {MPI_DISTRIBUTE_BLOCK}, dflt[1] = {MPI_DISTRIBUTE_DFLT_DARG}, two[1] = {2};
  MPI_Type_create_darray_c(2, 1, 1, g1, block, dflt, two, MPI_ORDER_C, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  b = build_plan(t);
  ASSERT_TRUE(b) << b.error().what;
  ASSERT_TRUE(b.value().plan.is_strided());
  EXPECT_EQ(b.value().plan.strided().offset, k2G + 16);
  EXPECT_EQ(b.value().plan.strided().block, k2G + 16);
  EXPECT_EQ(b.value().plan.extent, 2 * k2G + 32);
  MPI_Type_free(&t);

  // 2^27 + 4 cyclic runs of 4 bytes in each of 2 rows of 2^31 + 64 bytes:
  // one strided plan (the runs are never listed one by one, which took a
  // second and 64 MiB before giving up)
  const MPI_Count g2[2] = {2, k2G + 64};
  const int dist[2] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC}, darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 4},
            ps[2] = {1, 4};
  MPI_Type_create_darray_c(4, 1, 2, g2, dist, darg, ps, MPI_ORDER_C, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  b = build_plan(t);
  ASSERT_TRUE(b) << b.error().what;
  MPI_Count size = 0;
  MPI_Type_size_c(t, &size);
  EXPECT_EQ(b.value().plan.size, size);
  ASSERT_TRUE(b.value().plan.is_strided());
  const auto& s = b.value().plan.strided();
  EXPECT_EQ(s.offset, 4);
  EXPECT_EQ(s.block, 4);
  ASSERT_EQ(s.ndims, 1);  // a row is a whole number of runs: both rows are one run of runs
  EXPECT_EQ(s.dims[0].count, 2 * ((k2G >> 4) + 4));
  EXPECT_EQ(s.dims[0].stride, 16);
  MPI_Type_free(&t);
}

#endif  // DTMPI_HAVE_MPI_LARGE_COUNT
