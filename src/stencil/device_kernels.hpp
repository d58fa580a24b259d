// The stencil exchange's CUDA kernel (device_kernels.cu), behind plain
// structs so that the C++20 side (device.cpp) and nvcc share this header:
// one launch moves every piece (piece.hpp: a region of one quantity) of one
// kind -- into or out of the packed buffers, or straight into other
// subdomains' ghosts on the same GPU.
#pragma once
#include <cstdint>

#include "stencil/piece.hpp"

namespace dtmpi::stencil::device {

enum class Move { kPack, kUnpack, kCopy };

// The launch's table in device memory (built by device.cpp from piece.hpp's
// make_piece and block_table).
struct DeviceBatch {
  const Piece* pieces = nullptr;
  const BlockRef* order = nullptr;  // each block's piece and tile
  uint64_t blocks = 0;
};

// Queues the moves on `stream` (a cudaStream_t), in launches of at most 2^31 - 1
// blocks -- one per table entry, or `grid` blocks (if fewer) each moving
// every grid-th entry; returns the first launch error as a cudaError_t (as int).
int launch(Move move, const DeviceBatch& batch, void* stream, uint64_t grid = 0);

}  // namespace dtmpi::stencil::device
