// The batched GPU move's host side (src/stencil/piece.hpp, pieces.cpp),
// without a GPU: the divider against `/`, the word each piece loads with,
// and the kernel's block-to-word mapping run on the host (block_table's
// blocks, tile_word's words, piece_word's addresses -- the functions the
// kernel calls) moving random regions of random 3D arrays, byte-compared
// with a naive copy point by point.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <algorithm>
#include <vector>

#include "stencil/piece.hpp"

namespace dev = dtmpi::stencil::device;

namespace {

enum class Way { kPack, kUnpack, kCopy };

// What one launch does, block by block and thread by thread (device_kernels.cu).
void run_like_the_kernel(Way way, const std::vector<dev::Piece>& pieces) {
  const dev::BlockTable t = dev::block_table(pieces);
  for (uint64_t b = 0; b < t.blocks(); ++b) {
    const dev::Piece& p = pieces[t.order[b].piece];
    const uint64_t tile = t.order[b].tile;
    for (unsigned thread = 0; thread < dev::kThreads; ++thread)
      for (int k = 0; k < dev::kWordsPerThread; ++k) {
        const uint64_t i = dev::tile_word(tile, k, thread);
        if (i >= p.words) continue;
        char *mine, *other;
        dev::piece_word(p, i, mine, other);
        // the GPU loads and stores whole words: every address on both sides
        // a multiple of the piece's word (memcpy here would not care)
        ASSERT_EQ(reinterpret_cast<uintptr_t>(mine) % p.word, 0u) << "piece " << t.order[b].piece;
        ASSERT_EQ(reinterpret_cast<uintptr_t>(other) % p.word, 0u) << "piece " << t.order[b].piece;
        if (way == Way::kUnpack) std::memcpy(mine, other, p.word);
        else std::memcpy(other, mine, p.word);
      }
  }
}

// A pitched 3D array of `esize`-byte points (allocated with room for an
// offset start, so that alignments vary).
struct Grid {
  int64_t ax, ay, az, esize, pitch, slice;
  std::vector<char> bytes;
  char* base;
  Grid(int64_t x, int64_t y, int64_t z, int64_t e, int64_t pad, int64_t shift)
      : ax(x), ay(y), az(z), esize(e), pitch(x * e + pad), slice(pitch * y), bytes(static_cast<size_t>(slice * z + 64)) {
    // 16-aligned base, then the shift
    auto at = reinterpret_cast<uintptr_t>(bytes.data());
    base = bytes.data() + ((16 - at % 16) % 16) + shift;
  }
  char* point(int64_t x, int64_t y, int64_t z) { return base + z * slice + y * pitch + x * esize; }
};

void fill(std::vector<char>& v, std::mt19937_64& rng) {
  for (char& c : v) c = static_cast<char>(rng());
}

}  // namespace

TEST(StencilPieces, DividerMatchesDivision) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> divisors{1, 2, 3, 5, 7, 24, 255, 256, 257, 65535, 65536, 65537, (1u << 30) + 1,
                                 (uint64_t{1} << 31) - 1};
  for (int i = 0; i < 2000; ++i) divisors.push_back(1 + rng() % ((uint64_t{1} << 31) - 1));
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + rng() % 4096);
  for (uint64_t d : divisors) {
    const dev::FastDivider f(d);
    std::vector<uint32_t> ns{0, 1, static_cast<uint32_t>((uint64_t{1} << 31) - 1)};
    for (uint64_t m : {d - 1, d, d + 1, 2 * d - 1, 2 * d})
      if (m < (uint64_t{1} << 31)) ns.push_back(static_cast<uint32_t>(m));
    for (int k = 0; k < 50; ++k) ns.push_back(static_cast<uint32_t>(rng() % (uint64_t{1} << 31)));
    for (uint32_t n : ns) ASSERT_EQ(f.divide(n), n / d) << n << " / " << d;
  }
}

TEST(StencilPieces, WidestWordEveryAddressAllows) {
  alignas(16) static char mem[1 << 16], packed[1 << 16];
  // a y face of doubles in 512-byte rows: 16-byte loads
  EXPECT_EQ(dev::make_piece({256, 3, 4, 8}, mem, 2560, 2560 * 262, packed, 0, 0).word, 16u);
  // an x face of radius 3 (24-byte rows) starting 24 bytes into its row: 8
  EXPECT_EQ(dev::make_piece({3, 256, 4, 8}, mem + 24, 2560, 2560 * 262, packed, 0, 0).word, 8u);
  // the same packed after 216 bytes of a corner: still 8
  EXPECT_EQ(dev::make_piece({3, 256, 4, 8}, mem + 24, 2560, 2560 * 262, packed + 216, 0, 0).word, 8u);
  // floats in a row of 3: 4
  EXPECT_EQ(dev::make_piece({3, 5, 5, 4}, mem + 12, 512, 512 * 5, packed, 0, 0).word, 4u);
  // 3-byte points: bytes
  EXPECT_EQ(dev::make_piece({5, 5, 5, 3}, mem, 512, 512 * 5, packed, 0, 0).word, 1u);
  // 4 of them are 12 bytes: 4
  EXPECT_EQ(dev::make_piece({4, 5, 5, 3}, mem, 512, 512 * 5, packed, 0, 0).word, 4u);
  // an odd pitch on the other side of a copy: its alignment counts too
  EXPECT_EQ(dev::make_piece({4, 5, 5, 8}, mem, 512, 512 * 5, packed, 520, 520 * 5).word, 8u);
  // words and the packed side's strides
  const dev::Piece p = dev::make_piece({256, 3, 4, 8}, mem, 2560, 2560 * 262, packed, 0, 0);
  EXPECT_EQ(p.words, 256u * 8 / 16 * 3 * 4);
  EXPECT_EQ(p.other_pitch, 2048);
  EXPECT_EQ(p.other_slice, 2048 * 3);
  // nothing to move: no words, no blocks
  EXPECT_EQ(dev::make_piece({0, 3, 4, 8}, mem, 2560, 2560, packed, 0, 0).words, 0u);
  EXPECT_EQ(dev::block_table({dev::make_piece({0, 3, 4, 8}, mem, 2560, 2560, packed, 0, 0)}).blocks(), 0u);
}

TEST(StencilPieces, BlockTableCoversEveryWordOnce) {
  alignas(16) static char mem[64], packed[64];
  std::vector<dev::Piece> pieces;
  for (uint64_t words : {1ull, 1023ull, 1024ull, 1025ull, 5000ull}) {
    dev::Piece p = dev::make_piece({static_cast<int64_t>(words), 1, 1, 1}, mem + 1, 1 << 20, 1 << 20, packed, 0, 0);
    ASSERT_EQ(p.word, 1u);  // an odd start: byte words
    pieces.push_back(p);
  }
  // and two more of 1025 words: the three take turns, tile by tile
  pieces.push_back(pieces[3]);
  pieces.push_back(pieces[3]);
  const dev::BlockTable t = dev::block_table(pieces);
  EXPECT_EQ(t.blocks(), 1u + 1 + 1 + 2 + 5 + 2 + 2);
  std::vector<std::vector<int>> seen(pieces.size());
  for (const dev::BlockRef& r : t.order) {
    ASSERT_LT(r.piece, pieces.size());
    if (seen[r.piece].size() <= r.tile) seen[r.piece].resize(r.tile + 1, 0);
    ++seen[r.piece][r.tile];
  }
  for (size_t j = 0; j < pieces.size(); ++j) {
    EXPECT_EQ(seen[j].size(), dev::tiles_of(pieces[j])) << j;
    for (int n : seen[j]) EXPECT_EQ(n, 1) << j;  // every tile once
  }
  // the group of 1025 words (pieces 3, 5, 6) in turns: 3:0 5:0 6:0 3:1 5:1 6:1
  std::vector<std::pair<uint32_t, uint32_t>> group;
  for (const dev::BlockRef& r : t.order)
    if (r.piece == 3 || r.piece == 5 || r.piece == 6) group.push_back({r.piece, r.tile});
  const std::vector<std::pair<uint32_t, uint32_t>> turns{{3, 0}, {5, 0}, {6, 0}, {3, 1}, {5, 1}, {6, 1}};
  EXPECT_EQ(group, turns);
}

// Random regions of random arrays (element sizes 1-16 bytes, odd pitches and
// starts): packed back to back into one buffer and unpacked into a second
// array, and copied from one array's region into another's, all in one
// "launch" each -- every byte where the naive point-by-point copy puts it,
// and nothing else touched.
TEST(StencilPieces, RandomRegionsMoveLikeANaiveCopy) {
  std::mt19937_64 rng(2026);
  for (int round = 0; round < 60; ++round) {
    const int64_t esize = std::vector<int64_t>{1, 2, 3, 4, 8, 12, 16}[rng() % 7];
    const int64_t ax = 2 + static_cast<int64_t>(rng() % 40), ay = 2 + static_cast<int64_t>(rng() % 12),
                  az = 2 + static_cast<int64_t>(rng() % 12);
    Grid src(ax, ay, az, esize, static_cast<int64_t>(rng() % 3) * 8 + static_cast<int64_t>(rng() % 2),
             static_cast<int64_t>(rng() % 2) * 8);
    Grid dst(ax, ay, az, esize, static_cast<int64_t>(rng() % 3) * 16, 0);
    fill(src.bytes, rng);
    fill(dst.bytes, rng);
    const std::vector<char> dst_before = dst.bytes;
    struct Box {
      int64_t x, y, z, nx, ny, nz;
    };
    std::vector<Box> boxes;
    const int regions = 1 + static_cast<int>(rng() % 6);
    for (int r = 0; r < regions; ++r) {
      Box b;
      b.nx = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(ax));
      b.ny = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(ay));
      b.nz = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(az));
      b.x = static_cast<int64_t>(rng() % static_cast<uint64_t>(ax - b.nx + 1));
      b.y = static_cast<int64_t>(rng() % static_cast<uint64_t>(ay - b.ny + 1));
      b.z = static_cast<int64_t>(rng() % static_cast<uint64_t>(az - b.nz + 1));
      boxes.push_back(b);
    }
    // pack all regions back to back, then unpack them into dst (the same
    // boxes): dst's boxes hold src's bytes, the rest of dst is untouched
    int64_t packed_bytes = 0;
    for (const Box& b : boxes) packed_bytes += b.nx * b.ny * b.nz * esize;
    std::vector<char> packed(static_cast<size_t>(packed_bytes) + 16);
    char* pk = packed.data() + (rng() % 2) * esize;  // a packed start of any alignment
    std::vector<dev::Piece> pack, unpack;
    int64_t at = 0;
    for (const Box& b : boxes) {
      pack.push_back(dev::make_piece({b.nx, b.ny, b.nz, esize}, src.point(b.x, b.y, b.z), src.pitch, src.slice, pk + at,
                                     0, 0));
      unpack.push_back(dev::make_piece({b.nx, b.ny, b.nz, esize}, dst.point(b.x, b.y, b.z), dst.pitch, dst.slice,
                                       pk + at, 0, 0));
      at += b.nx * b.ny * b.nz * esize;
    }
    run_like_the_kernel(Way::kPack, pack);
    // the packed bytes: each box x fastest, boxes in order
    int64_t off = 0;
    for (const Box& b : boxes)
      for (int64_t z = 0; z < b.nz; ++z)
        for (int64_t y = 0; y < b.ny; ++y)
          for (int64_t x = 0; x < b.nx; ++x, off += esize)
            ASSERT_EQ(std::memcmp(pk + off, src.point(b.x + x, b.y + y, b.z + z), static_cast<size_t>(esize)), 0)
                << "round " << round << " packed byte " << off;
    run_like_the_kernel(Way::kUnpack, unpack);
    std::vector<char> expect = dst_before;
    const auto in_dst = [&](char* p) { return expect.data() + (p - dst.bytes.data()); };
    for (const Box& b : boxes)
      for (int64_t z = 0; z < b.nz; ++z)
        for (int64_t y = 0; y < b.ny; ++y)
          for (int64_t x = 0; x < b.nx; ++x)
            std::memcpy(in_dst(dst.point(b.x + x, b.y + y, b.z + z)), src.point(b.x + x, b.y + y, b.z + z),
                        static_cast<size_t>(esize));
    ASSERT_EQ(dst.bytes, expect) << "round " << round << ": unpacked";
    // a copy of box 0 of src to a shifted place in dst (a same-GPU direction)
    const Box& b = boxes.front();
    const int64_t tx = ax - b.nx, ty = ay - b.ny, tz = az - b.nz;
    run_like_the_kernel(Way::kCopy, {dev::make_piece({b.nx, b.ny, b.nz, esize}, src.point(b.x, b.y, b.z), src.pitch,
                                                      src.slice, dst.point(tx, ty, tz), dst.pitch, dst.slice)});
    for (int64_t z = 0; z < b.nz; ++z)
      for (int64_t y = 0; y < b.ny; ++y)
        for (int64_t x = 0; x < b.nx; ++x)
          std::memcpy(in_dst(dst.point(tx + x, ty + y, tz + z)), src.point(b.x + x, b.y + y, b.z + z),
                      static_cast<size_t>(esize));
    ASSERT_EQ(dst.bytes, expect) << "round " << round << ": copied";
  }
}

// Addresses only (nothing is moved): pieces just below and above 2^31 words,
// the dividers' path and the 64-bit one, against the coordinates' arithmetic.
TEST(StencilPieces, AddressesBelowAndAboveTheDividersLimit) {
  std::mt19937_64 rng(31);
  char* const mem = reinterpret_cast<char*>(uintptr_t{1} << 40);
  char* const packed = reinterpret_cast<char*>(uintptr_t{1} << 41);
  const int64_t pitch = 4096, slice = pitch * (int64_t{1} << 17);
  for (const dev::PieceShape shape : {dev::PieceShape{3, 1 << 17, 5000, 8},   // 1.97e9 < 2^31 words
                                      dev::PieceShape{3, 1 << 17, 1 << 14, 8}}) {    // 3 x 2^31 words
    const dev::Piece p = dev::make_piece(shape, mem + 24, pitch, slice, packed, 0, 0);
    ASSERT_EQ(p.word, 8u);
    ASSERT_EQ(p.words, static_cast<uint64_t>(shape.nx * shape.ny * shape.nz));
    for (int k = 0; k < 100000; ++k) {
      const uint64_t i = k < 3 ? std::vector<uint64_t>{0, p.words / 2, p.words - 1}[k] : rng() % p.words;
      const uint64_t x = i % 3, y = (i / 3) % (1 << 17), z = i / 3 / (1 << 17);
      char *mine, *other;
      dev::piece_word(p, i, mine, other);
      ASSERT_EQ(mine, mem + 24 + z * slice + y * pitch + x * 8) << i;
      ASSERT_EQ(other, packed + i * 8) << i;
    }
  }
}
