// Many pieces of one packed buffer at once (the collectives): each piece is
// `count` elements of its own plan, packed at its own offset. Plain data and
// the CPU loops here; one batched GPU launch for them: pack/gpu_dispatch.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "type/plan.hpp"

namespace dtmpi::pack {

// One piece of a collective's buffer: `count` elements of `plan` at `user`
// (where MPI's element 0 is), packed at byte `offset` of the packed buffer.
struct PieceRef {
  const type::PackPlan* plan = nullptr;
  int64_t count = 0;
  void* user = nullptr;
  int64_t offset = 0;
};

// The CPU packs every piece with a count into / out of host memory `packed`.
void pack_pieces_host(const PieceRef* pieces, size_t n, char* packed);
void unpack_pieces_host(const PieceRef* pieces, size_t n, const char* packed);

}  // namespace dtmpi::pack
