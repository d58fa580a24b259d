// The pieces of a batched move and their block table (piece.hpp): plain
// host code, so that the word choice and the table are tested without a GPU.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stencil/piece.hpp"

namespace dtmpi::stencil::device {

Piece make_piece(const PieceShape& shape, char* mem, int64_t pitch, int64_t slice, char* other, int64_t other_pitch,
                 int64_t other_slice) {
  Piece p;
  if (shape.nx <= 0 || shape.ny <= 0 || shape.nz <= 0 || shape.esize <= 0) return p;
  const int64_t row_bytes = shape.nx * shape.esize;
  if (other_pitch == 0 && other_slice == 0) {  // packed: rows one after another
    other_pitch = row_bytes;
    other_slice = row_bytes * shape.ny;
  }
  // the widest load every row start on both sides is aligned to: 16 bytes
  // for the rows of y and z faces in pitched allocations, 8 for most x faces
  // (a row of `radius` doubles), down to bytes for odd element sizes
  const auto aligned = [&](int64_t w) {
    const auto a = [w](int64_t v) { return v % w == 0; };
    return a(row_bytes) && a(static_cast<int64_t>(reinterpret_cast<uintptr_t>(mem))) &&
           a(static_cast<int64_t>(reinterpret_cast<uintptr_t>(other))) && a(pitch) && a(slice) && a(other_pitch) &&
           a(other_slice);
  };
  int64_t word = 16;
  while (word > 1 && !aligned(word)) word /= 2;
  p.mem = mem;
  p.other = other;
  p.pitch = pitch;
  p.slice = slice;
  p.other_pitch = other_pitch;
  p.other_slice = other_slice;
  p.word = static_cast<uint32_t>(word);
  const uint64_t row = static_cast<uint64_t>(row_bytes / word);
  p.words = row * static_cast<uint64_t>(shape.ny) * static_cast<uint64_t>(shape.nz);
  p.row = FastDivider(row);
  p.rows = FastDivider(static_cast<uint64_t>(shape.ny));
  return p;
}

BlockTable block_table(const std::vector<Piece>& pieces) {
  BlockTable t;
  t.starts.reserve(pieces.size() + 1);
  uint64_t blocks = 0;
  for (const Piece& p : pieces) {
    t.starts.push_back(blocks);
    blocks += (p.words + kTileWords - 1) / kTileWords;
  }
  t.starts.push_back(blocks);
  t.piece_of_block.reserve(blocks);
  for (size_t j = 0; j < pieces.size(); ++j)
    t.piece_of_block.insert(t.piece_of_block.end(), t.starts[j + 1] - t.starts[j], static_cast<uint32_t>(j));
  return t;
}

}  // namespace dtmpi::stencil::device
