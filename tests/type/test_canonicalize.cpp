// Canonicalization and plan compilation on hand-built and random IR: the rules
// fire where they should, and no rewrite ever changes the packed stream.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "pack/cpu_pack.hpp"
#include "type/canonicalize.hpp"
#include "type/plan.hpp"

using dtmpi::type::canonicalize;
using dtmpi::type::compile_plan;
using dtmpi::type::TypeIR;

namespace {

using Runs = std::vector<std::pair<int64_t, int64_t>>;
Runs runs_of(const TypeIR& ir) {
  Runs r;
  dtmpi::type::for_each_run(ir, [&](int64_t o, int64_t l) { r.emplace_back(o, l); });
  return r;
}

TypeIR vec(int64_t count, int64_t bl, int64_t stride, TypeIR elem, int64_t ext) {
  return TypeIR::stream(0, count, stride, TypeIR::stream(0, bl, ext, std::move(elem)));
}

}  // namespace

TEST(Canonicalize, DenseFoldingAndElision) {
  // contiguous(4, contiguous(2, FLOAT)) -> Dense(0, 32)
  auto ir = TypeIR::stream(0, 4, 8, TypeIR::stream(0, 2, 4, TypeIR::dense(0, 4)));
  auto c = canonicalize(ir);
  EXPECT_EQ(c, TypeIR::dense(0, 32));
  // vector(1,5,100,DOUBLE) -> Dense(0, 40)
  EXPECT_EQ(canonicalize(vec(1, 5, 800, TypeIR::dense(0, 8), 8)), TypeIR::dense(0, 40));
}

TEST(Canonicalize, ElidedLevelKeepsItsOffset) {
  // subarray({4,8,4},{1,3,2},{2,1,0}, DOUBLE): first byte at 544 (digest H2)
  auto ir = TypeIR::stream(
      512, 1, 256, TypeIR::stream(32, 3, 32, TypeIR::stream(0, 2, 8, TypeIR::dense(0, 8))));
  auto c = canonicalize(ir);
  EXPECT_EQ(runs_of(c), runs_of(ir));
  EXPECT_EQ(runs_of(c).front().first, 544);
  auto plan = compile_plan(c);
  ASSERT_TRUE(plan);
  ASSERT_TRUE(plan.value().is_strided());
  EXPECT_EQ(plan.value().strided().offset, 544);
  EXPECT_EQ(plan.value().strided().block, 16);
}

TEST(Canonicalize, FlatteningOnlyWhenContinuous) {
  // hvector(2,1,48, vector(3,1,2,DOUBLE)) == vector(6,1,2,DOUBLE)
  auto a = TypeIR::stream(0, 2, 48, vec(3, 1, 16, TypeIR::dense(0, 8), 8));
  auto b = vec(6, 1, 16, TypeIR::dense(0, 8), 8);
  EXPECT_EQ(canonicalize(a), canonicalize(b));
  // Jenkins' CS type must not flatten: 280 != 2*56, 56 != 4*16
  auto csvec = vec(4, 1, 16, TypeIR::dense(0, 8), 8);
  auto cs = vec(3, 2, 280, csvec, 56);
  auto c = canonicalize(cs);
  EXPECT_EQ(runs_of(c), runs_of(cs));
  auto plan = compile_plan(c);
  ASSERT_TRUE(plan.value().is_strided());
  EXPECT_EQ(plan.value().strided().ndims, 3);
}

TEST(Canonicalize, NeverReordersLevels) {
  // by_rows vs by_cols cover the same bytes in different pack orders
  auto dense13 = TypeIR::dense(0, 13);
  auto rows = TypeIR::stream(0, 5, 53, TypeIR::stream(0, 3, 16, dense13));
  auto cols = TypeIR::stream(0, 3, 16, TypeIR::stream(0, 5, 53, dense13));
  auto cr = canonicalize(rows), cc = canonicalize(cols);
  EXPECT_EQ(runs_of(cr), runs_of(rows));
  EXPECT_EQ(runs_of(cc), runs_of(cols));
  EXPECT_NE(runs_of(cr), runs_of(cc));
}

TEST(Canonicalize, RegularBlockListBecomesStrided) {
  std::vector<TypeIR> items;
  for (int i = 0; i < 8; ++i) items.push_back(TypeIR::dense(512 * i, 16));
  auto c = canonicalize(TypeIR::seq(items));
  auto plan = compile_plan(c);
  ASSERT_TRUE(plan.value().is_strided());
  EXPECT_EQ(plan.value().strided().block, 16);
  EXPECT_EQ(plan.value().strided().dims[0].count, 8);
  EXPECT_EQ(plan.value().strided().dims[0].stride, 512);
}

TEST(Canonicalize, IrregularBlockListStaysCompact) {
  // indexed({2,0,3,1},{10,0,20,5}, DOUBLE): runs (80,16)(160,24)(40,8)
  std::vector<TypeIR> items;
  const int bl[4] = {2, 0, 3, 1}, di[4] = {10, 0, 20, 5};
  for (int i = 0; i < 4; ++i)
    items.push_back(TypeIR::stream(di[i] * 8, bl[i], 8, TypeIR::dense(0, 8)));
  auto c = canonicalize(TypeIR::seq(items));
  auto plan = compile_plan(c);
  ASSERT_TRUE(plan);
  ASSERT_FALSE(plan.value().is_strided());
  const auto& ip = plan.value().irregular();
  ASSERT_EQ(ip.pieces.size(), 3u);
  EXPECT_EQ(ip.pieces[0].offset, 80);
  EXPECT_EQ(ip.pieces[0].block, 16);
  EXPECT_EQ(ip.pieces[1].offset, 160);
  EXPECT_EQ(ip.pieces[2].offset, 40);
  EXPECT_EQ(ip.body_bytes, 48);
}

// Random IR trees: canonical form and compiled plan pack exactly like the
// reference walk of the original tree.
namespace {
TypeIR random_ir(std::mt19937_64& rng, int depth) {
  auto u = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  if (depth == 0 || u(0, 4) == 0) return TypeIR::dense(u(-8, 8), u(0, 9));
  switch (u(0, 2)) {
    case 0: return TypeIR::stream(u(-16, 16), u(0, 4), u(-24, 24), random_ir(rng, depth - 1));
    case 1: {
      auto child = random_ir(rng, depth - 1);
      int n = u(0, 4), stride = u(-20, 40);
      std::vector<TypeIR> items;
      for (int i = 0; i < n; ++i) {
        auto c = child;
        c.off += i * stride + (u(0, 3) == 0 ? u(-3, 3) : 0);
        items.push_back(std::move(c));
      }
      return TypeIR::seq(std::move(items));
    }
    default: {
      std::vector<TypeIR> items;
      for (int i = u(0, 3); i > 0; --i) items.push_back(random_ir(rng, depth - 1));
      auto s = TypeIR::seq(std::move(items));
      s.off = u(-8, 8);
      return s;
    }
  }
}
}  // namespace

TEST(Canonicalize, RandomTreesKeepThePackedStream) {
  const uint64_t seed = 20261122;
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 20000; ++iter) {
    TypeIR ir = random_ir(rng, 4);
    Runs before = runs_of(ir);
    TypeIR c = canonicalize(ir);
    ASSERT_EQ(runs_of(c), before) << "seed " << seed << " iter " << iter << "\n" << to_string(ir);
    auto plan = compile_plan(c);
    ASSERT_TRUE(plan) << plan.error().what;
    // pack a patterned buffer with the plan and with the reference runs
    int64_t lo = 0, hi = 0;
    for (auto [o, l] : before) lo = std::min(lo, o), hi = std::max(hi, o + l);
    std::vector<unsigned char> src(static_cast<size_t>(hi - lo + 1));
    for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<unsigned char>(k * 131 + 7);
    std::vector<unsigned char> want, got(static_cast<size_t>(dtmpi::type::packed_size(ir)) + 1);
    for (auto [o, l] : before)
      for (int64_t k = 0; k < l; ++k) want.push_back(src[o + k - lo]);
    dtmpi::pack::pack_host(plan.value(), 1, src.data() - lo, got.data());
    got.resize(want.size());
    ASSERT_EQ(got, want) << "seed " << seed << " iter " << iter << "\n" << to_string(ir);
  }
}
