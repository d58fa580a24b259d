#include "pack/pieces.hpp"

#include "pack/cpu_pack.hpp"

namespace dtmpi::pack {

void pack_pieces_host(const PieceRef* pieces, size_t n, char* packed) {
  for (size_t i = 0; i < n; ++i)
    if (pieces[i].count > 0) pack_host(*pieces[i].plan, pieces[i].count, pieces[i].user, packed + pieces[i].offset);
}

void unpack_pieces_host(const PieceRef* pieces, size_t n, const char* packed) {
  for (size_t i = 0; i < n; ++i)
    if (pieces[i].count > 0) unpack_host(*pieces[i].plan, pieces[i].count, packed + pieces[i].offset, pieces[i].user);
}

}  // namespace dtmpi::pack
