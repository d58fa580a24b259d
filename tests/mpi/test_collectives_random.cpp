// Every collective with random derived datatypes (every constructor,
// nesting, negative strides, resized bounds) on both sides and random counts,
// against the system MPI doing the same call (PMPI_*). Part of
// test_collectives_more (same binary, same CTest runs).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/mpi_world.hpp"
#include "common/random_types.hpp"

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

namespace {

// Random derived types (every constructor, nesting, negative strides, resized
// bounds) usable as collective elements: element k+1 does not overlap
// element k, and no byte is written twice on receipt. The same on every rank.
std::vector<MPI_Datatype> usable_random_types(uint64_t seed, size_t want) {
  dtmpi::testing::RandomTypes gen(seed);
  std::vector<MPI_Datatype> out;
  while (out.size() < want) {
    MPI_Datatype t = gen.make(3);
    MPI_Type_commit(&t);
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_size(t, &size);
    MPI_Type_get_extent(t, &lb, &extent);
    const auto span = dtmpi::testing::span_of(t, 1);
    auto offs = dtmpi::testing::typemap_offsets(t, 1);
    std::sort(offs.begin(), offs.end());
    const bool ok = size > 0 && extent >= span.hi - span.lo && span.hi - span.lo < (1 << 14) &&
                    std::adjacent_find(offs.begin(), offs.end()) == offs.end();
    if (ok)
      out.push_back(t);
    else
      dtmpi::testing::free_type(t);
  }
  return out;
}

// A buffer for `elements` elements of `t` laid out from MPI's element 0,
// filled with `fill` (bytes never sent keep it: gaps are compared too).
struct TypedBuffer {
  std::vector<unsigned char> bytes;
  int64_t shift = 0;  // buffer pointer = bytes + shift
  TypedBuffer(MPI_Datatype t, int elements, int fill, int me) {
    const auto span = dtmpi::testing::span_of(t, std::max(elements, 1));
    shift = -span.lo + 8;
    bytes.assign(static_cast<size_t>(span.hi - span.lo + 16), static_cast<unsigned char>(fill));
    if (fill < 0)
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 131 + me * 17 + 1);
  }
  void* ptr() { return bytes.data() + shift; }
};

}  // namespace

// Every collective with random derived types on both sides and random counts,
// against the system MPI.
TEST(MoreCollectives, RandomTypesEveryCollective) {
  const int me = world_rank(), n = world_size();
  auto types = usable_random_types(2026, 10);
  std::mt19937 rng(99);  // same draws on every rank
  for (size_t k = 0; k < types.size() && !::testing::Test::HasFailure(); ++k) {
    MPI_Datatype t = types[k];
    // alltoallv: what i sends j is (i + 2j + k) % 4 elements
    auto cnt = [&](int i, int j) { return static_cast<int>((i + 2 * j + k) % 4); };
    std::vector<int> sc(static_cast<size_t>(n)), sd(static_cast<size_t>(n)), rc(static_cast<size_t>(n)),
        rd(static_cast<size_t>(n));
    int sat = 0, rat = 0;
    for (int i = 0; i < n; ++i) {
      sc[static_cast<size_t>(i)] = cnt(me, i);
      rc[static_cast<size_t>(i)] = cnt(i, me);
      sd[static_cast<size_t>(i)] = sat;
      rd[static_cast<size_t>(i)] = rat + 1;
      sat += sc[static_cast<size_t>(i)] + static_cast<int>(rng() % 2);
      rat += rc[static_cast<size_t>(i)] + 1;
    }
    TypedBuffer src(t, sat + 1, -1, me), want(t, rat + 2, 0xAB, me), got(t, rat + 2, 0xAB, me);
    ASSERT_EQ(PMPI_Alltoallv(src.ptr(), sc.data(), sd.data(), t, want.ptr(), rc.data(), rd.data(), t, MPI_COMM_WORLD),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Alltoallv(src.ptr(), sc.data(), sd.data(), t, got.ptr(), rc.data(), rd.data(), t, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_TRUE(got.bytes == want.bytes) << "alltoallv, type " << k;
    // allgatherv and gatherv (root k % n): rank i contributes cnt(i, 0) elements
    std::vector<int> gc(static_cast<size_t>(n)), gd(static_cast<size_t>(n));
    int gat = 0;
    for (int i = 0; i < n; ++i) {
      gc[static_cast<size_t>(i)] = cnt(i, 0) + 1;
      gd[static_cast<size_t>(i)] = gat;
      gat += gc[static_cast<size_t>(i)] + 1;
    }
    TypedBuffer gw(t, gat, 0xCD, me), gg(t, gat, 0xCD, me);
    const int mine = gc[static_cast<size_t>(me)];
    ASSERT_EQ(PMPI_Allgatherv(src.ptr(), mine, t, gw.ptr(), gc.data(), gd.data(), t, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allgatherv(src.ptr(), mine, t, gg.ptr(), gc.data(), gd.data(), t, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(gg.bytes == gw.bytes) << "allgatherv, type " << k;
    const int root = static_cast<int>(k) % n;
    TypedBuffer vw(t, gat, 0xEF, me), vg(t, gat, 0xEF, me);
    ASSERT_EQ(PMPI_Gatherv(src.ptr(), mine, t, vw.ptr(), gc.data(), gd.data(), t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Gatherv(src.ptr(), mine, t, vg.ptr(), gc.data(), gd.data(), t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(vg.bytes == vw.bytes) << "gatherv, type " << k;
    // scatterv from the root back, then bcast of 5 elements from the root
    TypedBuffer sw(t, mine, 0x11, me), sg(t, mine, 0x11, me);
    ASSERT_EQ(PMPI_Scatterv(gw.ptr(), gc.data(), gd.data(), t, sw.ptr(), mine, t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Scatterv(gw.ptr(), gc.data(), gd.data(), t, sg.ptr(), mine, t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(sg.bytes == sw.bytes) << "scatterv, type " << k;
    TypedBuffer bw(t, 5, -1, me), bg(t, 5, -1, me);
    ASSERT_EQ(PMPI_Bcast(bw.ptr(), 5, t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Bcast(bg.ptr(), 5, t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(bg.bytes == bw.bytes) << "bcast, type " << k;
  }
  // alltoallw: the pair (i -> j) uses type (i + j) % 10 at both ends, 2 elements
  std::vector<int> wc(static_cast<size_t>(n), 2), sd(static_cast<size_t>(n)), rd(static_cast<size_t>(n));
  std::vector<MPI_Datatype> st(static_cast<size_t>(n)), rt(static_cast<size_t>(n));
  int64_t sat = 0, rat = 0;
  for (int i = 0; i < n; ++i) {
    st[static_cast<size_t>(i)] = types[static_cast<size_t>((me + i) % 10)];
    rt[static_cast<size_t>(i)] = types[static_cast<size_t>((i + me) % 10)];
    const auto ss = dtmpi::testing::span_of(st[static_cast<size_t>(i)], 2);
    const auto rs = dtmpi::testing::span_of(rt[static_cast<size_t>(i)], 2);
    sd[static_cast<size_t>(i)] = static_cast<int>(sat - ss.lo);
    rd[static_cast<size_t>(i)] = static_cast<int>(rat - rs.lo);
    sat += ss.hi - ss.lo + 8;
    rat += rs.hi - rs.lo + 8;
  }
  std::vector<unsigned char> wsrc(static_cast<size_t>(sat)), wwant(static_cast<size_t>(rat), 0x5A), wgot = wwant;
  for (size_t i = 0; i < wsrc.size(); ++i) wsrc[i] = static_cast<unsigned char>(i * 7 + me);
  ASSERT_EQ(PMPI_Alltoallw(wsrc.data(), wc.data(), sd.data(), st.data(), wwant.data(), wc.data(), rd.data(), rt.data(),
                           MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Alltoallw(wsrc.data(), wc.data(), sd.data(), st.data(), wgot.data(), wc.data(), rd.data(), rt.data(),
                          MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_TRUE(wgot == wwant) << "alltoallw";
  for (auto& t : types) dtmpi::testing::free_type(t);
}

