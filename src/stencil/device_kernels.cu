// The stencil exchange's one kernel (device_kernels.hpp): every block moves
// one tile of one piece (piece.hpp) -- a region of one quantity -- in the
// word size the piece allows, for packs, same-GPU copies and unpacks alike.
#include <cuda_runtime.h>

#include "stencil/device_kernels.hpp"

namespace dtmpi::stencil::device {
namespace {

// Block `first + blockIdx.x` moves the tile its BlockRef names: up to
// kWordsPerThread words a thread, a block's threads side by side, every load
// issued before the first store so that each thread has several in flight
// (one 8-byte load a thread left the H100's memory system under-filled).
template <class W>
__device__ __forceinline__ void move_tile(Move move, const Piece& p, uint64_t tile) {
  W value[kWordsPerThread];
  char* to[kWordsPerThread];
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k) {
    const uint64_t i = tile_word(tile, k, threadIdx.x);
    to[k] = nullptr;
    if (i >= p.words) continue;
    char *mine, *other;
    piece_word(p, i, mine, other);
    const char* from = move == Move::kUnpack ? other : mine;
    to[k] = move == Move::kUnpack ? mine : other;
    value[k] = *reinterpret_cast<const W*>(from);
  }
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k)
    if (to[k]) *reinterpret_cast<W*>(to[k]) = value[k];
}

// Blocks first .. first + count - 1 of the table, gridDim.x blocks taking
// them in turn: one each with a full grid, several each with a narrow one.
__global__ void __launch_bounds__(kThreads) move_pieces(Move move, DeviceBatch b, uint64_t first, uint64_t count) {
  for (uint64_t k = blockIdx.x; k < count; k += gridDim.x) {
    const BlockRef ref = b.order[first + k];
    const Piece p = b.pieces[ref.piece];
    const uint64_t tile = ref.tile;
    switch (p.word) {  // the same for the whole block
      case 16: move_tile<uint4>(move, p, tile); break;
      case 8: move_tile<uint64_t>(move, p, tile); break;
      case 4: move_tile<uint32_t>(move, p, tile); break;
      case 2: move_tile<uint16_t>(move, p, tile); break;
      default: move_tile<unsigned char>(move, p, tile); break;
    }
  }
}

}  // namespace

int launch(Move move, const DeviceBatch& batch, void* stream, uint64_t grid) {
  constexpr uint64_t kMaxBlocks = (uint64_t{1} << 31) - 1;  // gridDim.x
  const auto s = static_cast<cudaStream_t>(stream);
  for (uint64_t first = 0; first < batch.blocks; first += kMaxBlocks) {
    const uint64_t n = batch.blocks - first < kMaxBlocks ? batch.blocks - first : kMaxBlocks;
    const uint64_t blocks = grid > 0 && grid < n ? grid : n;
    move_pieces<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(move, batch, first, n);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  return cudaSuccess;
}

}  // namespace dtmpi::stencil::device
