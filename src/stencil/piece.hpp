// One launch per kind of move (pack, same-GPU copy, unpack) for all the
// regions of an exchange: each (region, quantity) is a Piece -- rows of
// `row` words, `rows` rows a plane, on the subdomain's side at (pitch,
// slice) and on the other side (a packed buffer, or another subdomain's
// ghosts) at (other_pitch, other_slice) -- and the launch's blocks are dealt
// out to the pieces, kTileWords words each (issue 23: the exchange against
// its packed-bytes limit; one launch per region paid a launch and a partial
// last wave for each of the 26 directions, and the small edge and corner
// regions ran alone).
//
// The address arithmetic is shared by the kernel (device_kernels.cu) and the
// host (the unit test moves bytes with the same function as the GPU).
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__CUDACC__)
#define DTMPI_HOST_DEVICE __host__ __device__
#else
#define DTMPI_HOST_DEVICE
#endif

namespace dtmpi::stencil::device {

constexpr uint64_t kFastLimit = uint64_t{1} << 31;

// n / d for 0 <= n < 2^31 with one multiply-high and a shift (Granlund and
// Montgomery's method, with a 33-bit multiplier whose top bit is the `+ n`):
// a thread finds its row and plane by two of these instead of two 32-bit
// divisions (~20 instructions each), which at 8 bytes a thread cost about as
// much as the memory traffic.
// The divisor is kept whole for the 64-bit path (the multiplier is made only
// for divisors below 2^31, all a fast piece has).
struct FastDivider {
  uint64_t divisor = 1;
  uint32_t magic = 1, shift = 0;
  FastDivider() = default;
  explicit FastDivider(uint64_t d) : divisor(d) {
    if (d == 0 || d >= kFastLimit) return;
    while ((uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  DTMPI_HOST_DEVICE uint32_t divide(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, magic);
#else
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
#endif
    return (hi + n) >> shift;
  }
};

// Words one block moves: 256 threads x 4 words each, all loads before the stores.
constexpr int kThreads = 256;
constexpr int kWordsPerThread = 4;
constexpr uint64_t kTileWords = static_cast<uint64_t>(kThreads) * kWordsPerThread;

struct Piece {
  char* mem = nullptr;    // the subdomain's side: the region's first byte
  char* other = nullptr;  // the packed bytes' first, or the copy destination's first
  int64_t pitch = 0, slice = 0;              // bytes between rows / planes, subdomain side
  int64_t other_pitch = 0, other_slice = 0;  // the other side's (packed: row bytes, plane bytes)
  uint64_t words = 0;                        // row * rows * planes
  uint32_t word = 1;                         // bytes a load moves: 1, 2, 4, 8 or 16
  FastDivider row, rows;                     // words a row, rows a plane
};

// Built by the host compiler, copied byte for byte to the GPU and read
// there by nvcc's code: plain data of one layout for both.
static_assert(std::is_trivially_copyable_v<Piece> && std::is_standard_layout_v<Piece>);
static_assert(sizeof(FastDivider) == 16 && sizeof(Piece) == 96);

// The word thread `thread` of a block moves as its k-th in tile `tile` of a
// piece: a block's threads side by side (coalesced), k-th words kThreads apart.
DTMPI_HOST_DEVICE inline uint64_t tile_word(uint64_t tile, int k, unsigned thread) {
  return tile * kTileWords + static_cast<uint64_t>(k) * kThreads + thread;
}

// Where word `i` of `p` lies on each side. Pieces with fewer words than
// kFastLimit take the dividers; larger ones (16 GiB of 8-byte words) divide
// in 64 bits.
DTMPI_HOST_DEVICE inline void piece_word(const Piece& p, uint64_t i, char*& mine, char*& other) {
  uint64_t x, y, z;
  if (p.words < kFastLimit) {
    const uint32_t w = static_cast<uint32_t>(i), r = p.row.divide(w), pl = p.rows.divide(r);
    x = w - r * static_cast<uint32_t>(p.row.divisor);
    y = r - pl * static_cast<uint32_t>(p.rows.divisor);
    z = pl;
  } else {
    const uint64_t r = i / p.row.divisor;
    x = i - r * p.row.divisor;
    z = r / p.rows.divisor;
    y = r - z * p.rows.divisor;
  }
  const uint64_t bytes = x * p.word;
  mine = p.mem + static_cast<int64_t>(z) * p.slice + static_cast<int64_t>(y) * p.pitch + bytes;
  other = p.other + static_cast<int64_t>(z) * p.other_slice + static_cast<int64_t>(y) * p.other_pitch + bytes;
}

// A region of one quantity: `n` points a row / rows a plane / planes, of
// `esize` bytes each, rows `row_bytes = n.x * esize` long on both sides.
struct PieceShape {
  int64_t nx = 0, ny = 0, nz = 0, esize = 0;
};

// The piece moving `shape` between `mem` (pitch, slice) and `other`
// (other_pitch, other_slice; a packed side: 0, 0 -- then rows follow each
// other); its word the widest (up to 16 bytes) dividing the row's bytes and
// every address and stride it touches. Empty shapes give a piece of 0 words.
Piece make_piece(const PieceShape& shape, char* mem, int64_t pitch, int64_t slice, char* other, int64_t other_pitch,
                 int64_t other_slice);

// One block's work: tile `tile` of piece `piece`.
struct BlockRef {
  uint32_t piece = 0, tile = 0;
};
static_assert(std::is_trivially_copyable_v<BlockRef> && sizeof(BlockRef) == 8);

// The launch's blocks in order. Pieces of the same number of words take
// turns tile by tile (tile 0 of each, then tile 1 of each, ...), so that
// the blocks resident at one time cover the same rows of every such piece:
// the two x-face copies between a pair of subdomains read and write the
// same DRAM bursts (a row's 3 ghost doubles sit in the burst of its 3 first
// interior ones), and interleaved, the second finds them in L2 instead of
// fetching them again. Groups of equal size in order of their first piece.
// Null (no table) where a piece has 2^32 tiles or more (4 TiB: no GPU's).
struct BlockTable {
  std::vector<BlockRef> order;
  uint64_t blocks() const { return order.size(); }
};
BlockTable block_table(const std::vector<Piece>& pieces);
// Tiles of a piece: words / kTileWords, rounded up.
inline uint64_t tiles_of(const Piece& p) { return (p.words + kTileWords - 1) / kTileWords; }

}  // namespace dtmpi::stencil::device
