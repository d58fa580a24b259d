// Large-count datatypes (MPI-4 MPI_Type_*_c constructors) through the
// interposer, linked before -lmpi and preloaded: committing them must not
// abort (MPICH 4 aborts a program that asks the classic
// MPI_Type_get_envelope about them), MPI_Pack/MPI_Unpack must give the system
// MPI's bytes, and sends, receives, persistent requests and duplicates must
// deliver them, also for strides and displacements past 2^31 bytes. Skipped
// where the MPI has no large-count functions (Open MPI 4.1).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "common/mpi_world.hpp"
#include "common/sparse_buffer.hpp"

#ifndef DTMPI_HAVE_MPI_LARGE_COUNT

TEST(LargeCount, NeedsAnMpiWithLargeCounts) { GTEST_SKIP() << "this MPI has no MPI_Type_*_c functions"; }

#else

namespace {

using dtmpi::testing::Block;
using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;
constexpr MPI_Count k2G = MPI_Count{1} << 31;

// A counter of dtmpi_stats(), looked up at run time (the preloaded build has no libdtmpi to link).
uint64_t stat(const char* key) {
  auto stats = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "dtmpi_stats"));
  if (!stats) return 0;
  const std::string s = stats();
  const auto at = s.find(key);
  return at == std::string::npos ? 0 : std::strtoull(s.c_str() + at + std::strlen(key), nullptr, 10);
}
uint64_t packs_by_dtmpi() { return stat("MPI_Pack ") + stat("MPI_Unpack "); }

struct Named {
  std::string what;
  MPI_Datatype type;
};

// Normal-size types from every large-count constructor, committed by dtmpi's
// MPI_Type_commit; none touches a byte twice.
std::vector<Named> every_constructor() {
  std::vector<Named> v;
  auto add = [&](const char* what, MPI_Datatype t) {
    EXPECT_EQ(MPI_Type_commit(&t), MPI_SUCCESS) << what;
    v.push_back({what, t});
  };
  MPI_Datatype t, inner;
  MPI_Type_contiguous_c(7, MPI_INT, &t), add("contiguous_c", t);
  MPI_Type_vector_c(5, 2, 3, MPI_DOUBLE, &t), add("vector_c", t);
  MPI_Type_create_hvector_c(4, 3, -20, MPI_SHORT, &t), add("hvector_c", t);
  const MPI_Count bl[3] = {2, 0, 3}, di[3] = {9, 0, 1}, hd[3] = {72, 0, 8};
  MPI_Type_indexed_c(3, bl, di, MPI_DOUBLE, &t), add("indexed_c", t);
  MPI_Type_create_hindexed_c(3, bl, hd, MPI_DOUBLE, &t), add("hindexed_c", t);
  MPI_Type_create_indexed_block_c(3, 1, di, MPI_FLOAT, &t), add("indexed_block_c", t);
  MPI_Type_create_hindexed_block_c(3, 2, hd, MPI_FLOAT, &t), add("hindexed_block_c", t);
  const MPI_Count sbl[3] = {3, 1, 1}, sdi[3] = {0, 16, 24};
  MPI_Datatype sty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct_c(3, sbl, sdi, sty, &inner);
  MPI_Type_create_resized_c(inner, 0, 32, &t), add("resized_c of struct_c", t);
  MPI_Type_free(&inner);
  const MPI_Count sz[3] = {6, 5, 8}, sub[3] = {2, 3, 4}, st[3] = {3, 1, 2};
  MPI_Type_create_subarray_c(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t), add("subarray_c C", t);
  MPI_Type_create_subarray_c(3, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t), add("subarray_c Fortran", t);
  const MPI_Count g[2] = {9, 14};
  const int dist[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, darg[2] = {2, MPI_DISTRIBUTE_DFLT_DARG},
            ps[2] = {2, 3};
  MPI_Type_create_darray_c(6, 5, 2, g, dist, darg, ps, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t), add("darray_c", t);
  MPI_Type_vector_c(3, 1, 2, MPI_INT, &inner);
  MPI_Type_contiguous(2, inner, &t), add("contiguous of vector_c", t);
  MPI_Type_free(&inner);
  return v;
}

// Bytes of a buffer that covers (count, t) from true lb to true ub.
struct Span {
  MPI_Aint lo = 0, bytes = 0;
};
Span span_of(MPI_Datatype t, int count) {
  MPI_Aint lb, ext, tlb, text;
  MPI_Type_get_extent(t, &lb, &ext);
  MPI_Type_get_true_extent(t, &tlb, &text);
  return Span{tlb + (ext < 0 ? (count - 1) * ext : 0), text + (count - 1) * (ext < 0 ? -ext : ext)};
}

std::vector<unsigned char> filled(size_t n, int seed) {
  std::vector<unsigned char> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(seed * 29 + i * 7 + (i >> 8));
  return b;
}

}  // namespace

TEST(LargeCount, PackAndUnpackLikeTheSystemMpi) {
  auto types = every_constructor();
  const uint64_t served = packs_by_dtmpi();
  for (auto& [what, t] : types) {
    for (int count = 1; count <= 3; ++count) {
      SCOPED_TRACE(what + " count " + std::to_string(count));
      const Span s = span_of(t, count);
      auto src = filled(static_cast<size_t>(s.bytes), count);
      unsigned char* base = src.data() - s.lo;
      int bound = 0;
      ASSERT_EQ(MPI_Pack_size(count, t, MPI_COMM_WORLD, &bound), MPI_SUCCESS);
      std::vector<unsigned char> ours(static_cast<size_t>(bound) + 5, 0), ref(ours.size(), 0);
      int p1 = 5, p2 = 5;
      ASSERT_EQ(MPI_Pack(base, count, t, ours.data(), static_cast<int>(ours.size()), &p1, MPI_COMM_WORLD),
                MPI_SUCCESS);
      ASSERT_EQ(PMPI_Pack(base, count, t, ref.data(), static_cast<int>(ref.size()), &p2, MPI_COMM_WORLD),
                MPI_SUCCESS);
      ASSERT_EQ(p1, p2);
      EXPECT_EQ(ours, ref);
      std::vector<unsigned char> a(src.size(), 0xC3), b(src.size(), 0xC3);
      p1 = 5, p2 = 5;
      ASSERT_EQ(MPI_Unpack(ref.data(), static_cast<int>(ref.size()), &p1, a.data() - s.lo, count, t, MPI_COMM_WORLD),
                MPI_SUCCESS);
      ASSERT_EQ(PMPI_Unpack(ref.data(), static_cast<int>(ref.size()), &p2, b.data() - s.lo, count, t, MPI_COMM_WORLD),
                MPI_SUCCESS);
      EXPECT_EQ(p1, p2);
      EXPECT_EQ(a, b);
    }
    MPI_Type_free(&t);
  }
  // dtmpi planned these types and packed them itself
  if (dlsym(RTLD_DEFAULT, "dtmpi_stats")) {
    EXPECT_GE(packs_by_dtmpi() - served, 2 * 3 * types.size());
  }
}

// Ring exchange with every type: sent with the type and received as bytes,
// sent as bytes and received with the type; persistent requests; a duplicate
// used after the original was freed.
TEST(LargeCount, SendAndReceive) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  auto types = every_constructor();
  for (auto& [what, t] : types) {
    SCOPED_TRACE(what);
    const int count = 2;
    const Span s = span_of(t, count);
    MPI_Count size = 0;
    MPI_Type_size_c(t, &size);
    auto mine = filled(static_cast<size_t>(s.bytes), me), theirs = filled(static_cast<size_t>(s.bytes), left);
    std::vector<unsigned char> want(static_cast<size_t>(size * count));
    int pos = 0;
    PMPI_Pack(theirs.data() - s.lo, count, t, want.data(), static_cast<int>(want.size()), &pos, MPI_COMM_SELF);
    std::vector<unsigned char> got(want.size(), 0);
    MPI_Status st;
    ASSERT_EQ(MPI_Sendrecv(mine.data() - s.lo, count, t, right, 1, got.data(), static_cast<int>(got.size()), MPI_BYTE,
                           left, 1, MPI_COMM_WORLD, &st),
              MPI_SUCCESS);
    EXPECT_EQ(got, want);
    // the reverse: packed bytes in, the type out; the reference is PMPI_Unpack
    std::vector<unsigned char> into(s.bytes, 0x11), ref(s.bytes, 0x11);
    pos = 0;
    PMPI_Unpack(want.data(), static_cast<int>(want.size()), &pos, ref.data() - s.lo, count, t, MPI_COMM_SELF);
    std::vector<unsigned char> packed_mine(want.size());
    pos = 0;
    PMPI_Pack(mine.data() - s.lo, count, t, packed_mine.data(), static_cast<int>(packed_mine.size()), &pos,
              MPI_COMM_SELF);
    MPI_Request rq[2];
    ASSERT_EQ(MPI_Irecv(into.data() - s.lo, count, t, left, 2, MPI_COMM_WORLD, &rq[0]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Isend(packed_mine.data(), static_cast<int>(packed_mine.size()), MPI_BYTE, right, 2, MPI_COMM_WORLD,
                        &rq[1]),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(into, ref);
    // persistent requests, on a duplicate whose original is gone
    MPI_Datatype dup;
    ASSERT_EQ(MPI_Type_dup(t, &dup), MPI_SUCCESS);
    MPI_Type_free(&t);
    std::vector<unsigned char> again(s.bytes, 0x11);
    ASSERT_EQ(MPI_Recv_init(again.data() - s.lo, count, dup, left, 3, MPI_COMM_WORLD, &rq[0]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Send_init(mine.data() - s.lo, count, dup, right, 3, MPI_COMM_WORLD, &rq[1]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Startall(2, rq), MPI_SUCCESS);
    ASSERT_EQ(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    EXPECT_EQ(again, ref);
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    MPI_Type_free(&dup);
  }
}

// Strides and displacements past 2^31 bytes, on buffers that cost memory only
// where the type touches them: MPI_Pack and MPI_Unpack against the system MPI
// and the standard's typemap, and a ring exchange both ways.
TEST(LargeCount, StridesAndDisplacementsPast2To31) {
  struct Huge {
    const char* what;
    MPI_Datatype type;
    std::vector<Block> blocks;  // the typemap in pack order, all offsets >= 0
  };
  std::vector<Huge> cases;
  MPI_Datatype t;
  MPI_Type_vector_c(3, 8, k2G + 24, MPI_BYTE, &t);
  cases.push_back({"vector_c", t, {{0, 8}, {k2G + 24, 8}, {2 * (k2G + 24), 8}}});
  const MPI_Count sbl[2] = {1, 2}, sdi[2] = {8, 2 * k2G + 16};
  MPI_Datatype sty[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_create_struct_c(2, sbl, sdi, sty, &t);
  cases.push_back({"struct_c", t, {{8, 4}, {2 * k2G + 16, 16}}});
  const MPI_Count sz[2] = {3, k2G + 64}, sub[2] = {2, 16}, st[2] = {1, k2G + 8};
  MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_BYTE, &t);
  cases.push_back({"subarray_c", t, {{(k2G + 64) + k2G + 8, 16}, {2 * (k2G + 64) + k2G + 8, 16}}});
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  for (auto& h : cases) {
    SCOPED_TRACE(h.what);
    ASSERT_EQ(MPI_Type_commit(&h.type), MPI_SUCCESS);
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(h.type, &tlb, &text);
    ASSERT_GE(tlb, 0);
    const auto want = dtmpi::testing::packed_pattern(h.blocks, static_cast<unsigned>(me));
    dtmpi::testing::SparseBuffer src(tlb + text + 4096);
    ASSERT_TRUE(src.ok());
    dtmpi::testing::fill_blocks(src.data(), h.blocks, static_cast<unsigned>(me));
    std::vector<unsigned char> ours(want.size()), ref(want.size());
    int p1 = 0, p2 = 0;
    const uint64_t served = packs_by_dtmpi();
    ASSERT_EQ(MPI_Pack(src.data(), 1, h.type, ours.data(), static_cast<int>(ours.size()), &p1, MPI_COMM_WORLD),
              MPI_SUCCESS);
    ASSERT_EQ(PMPI_Pack(src.data(), 1, h.type, ref.data(), static_cast<int>(ref.size()), &p2, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(p1, p2);
    EXPECT_EQ(ref, want);
    EXPECT_EQ(ours, want);
    if (dlsym(RTLD_DEFAULT, "dtmpi_stats")) {
      EXPECT_EQ(packs_by_dtmpi() - served, 1u) << "not planned";
    }
    {
      dtmpi::testing::SparseBuffer back(tlb + text + 4096);
      p1 = 0;
      ASSERT_EQ(MPI_Unpack(want.data(), static_cast<int>(want.size()), &p1, back.data(), 1, h.type, MPI_COMM_WORLD),
                MPI_SUCCESS);
      EXPECT_TRUE(dtmpi::testing::holds_pattern(back.data(), h.blocks, static_cast<unsigned>(me)));
    }
    // the type out, bytes in; then bytes out, the type in
    std::vector<unsigned char> got(want.size());
    ASSERT_EQ(MPI_Sendrecv(src.data(), 1, h.type, right, 4, got.data(), static_cast<int>(got.size()), MPI_BYTE, left,
                           4, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              MPI_SUCCESS);
    EXPECT_EQ(got, dtmpi::testing::packed_pattern(h.blocks, static_cast<unsigned>(left)));
    dtmpi::testing::SparseBuffer dst(tlb + text + 4096);
    ASSERT_EQ(MPI_Sendrecv(want.data(), static_cast<int>(want.size()), MPI_BYTE, right, 5, dst.data(), 1, h.type, left,
                           5, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              MPI_SUCCESS);
    EXPECT_TRUE(dtmpi::testing::holds_pattern(dst.data(), h.blocks, static_cast<unsigned>(left)));
    MPI_Type_free(&h.type);
  }
}

// A type of more than 2^31 bytes (too big for the int sizes of MPI_Pack and a
// test machine's memory): committed, duplicated and freed without an abort.
TEST(LargeCount, TypesPast2To31BytesAreCommittedAndFreed) {
  MPI_Datatype t, d;
  MPI_Type_contiguous_c(k2G + 8, MPI_BYTE, &t);
  ASSERT_EQ(MPI_Type_commit(&t), MPI_SUCCESS);
  ASSERT_EQ(MPI_Type_dup(t, &d), MPI_SUCCESS);
  MPI_Count size = 0;
  MPI_Type_size_c(d, &size);
  EXPECT_EQ(size, k2G + 8);
  MPI_Type_free(&t);
  MPI_Type_free(&d);
}

#endif  // DTMPI_HAVE_MPI_LARGE_COUNT
