// The pieces of a batched move and their block table (piece.hpp): plain
// host code, so that the word choice and the table are tested without a GPU.
#include <cstddef>
#include <cstdint>
#include <map>
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
  // the widest load every row start on both sides is aligned to: a face's
  // rows start `radius` elements into a 512-byte-aligned row (8 bytes for
  // doubles at radius 1 or 3), 16 where that offset and the element allow
  // (16-byte elements), down to bytes for odd element sizes
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
  // groups of pieces with equal words, in order of their first piece
  std::vector<std::vector<uint32_t>> groups;
  std::map<uint64_t, size_t> group_of;  // words -> index in groups
  uint64_t blocks = 0;
  for (size_t j = 0; j < pieces.size(); ++j) {
    const uint64_t tiles = tiles_of(pieces[j]);
    if (tiles == 0) continue;
    if (tiles > UINT32_MAX) return BlockTable{};
    blocks += tiles;
    auto [it, fresh] = group_of.emplace(pieces[j].words, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(static_cast<uint32_t>(j));
  }
  t.order.reserve(blocks);
  for (const std::vector<uint32_t>& g : groups) {
    const uint64_t tiles = tiles_of(pieces[g.front()]);  // the same for the group
    for (uint64_t tile = 0; tile < tiles; ++tile)
      for (uint32_t j : g) t.order.push_back({j, static_cast<uint32_t>(tile)});
  }
  return t;
}

}  // namespace dtmpi::stencil::device
