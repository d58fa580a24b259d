// Alltoallw on one rank (coll/entry.hpp): dtmpi's copy of the send block into
// the receive block, whatever DTMPI_COLL says.
#include <algorithm>
#include <cstring>

#include "coll/entry.hpp"
#include "coll/sides.hpp"
#include "runtime/buffer_hint.hpp"
#include "transport/engine.hpp"

namespace dtmpi::coll::detail {

namespace {

// A request complete from its start (the 1-rank Alltoallw's).
class Finished final : public transport::Operation {
 public:
  explicit Finished(int code) { error = code; }
  bool step() override { return true; }
};

// Alltoallw on one rank: a copy of the send block into the receive block,
// done here whatever DTMPI_COLL says (host memory: a buffer on a GPU, which
// only a CUDA-aware system MPI gets here unstaged, stays its call). Open MPI
// 4.1's own (coll/self) takes the displacements for extents of the types
// instead of bytes: the wrong place, past the buffer's end (seen by
// CollV.AlltoallwMatchesSystem on its 1-rank halves; a plain C program
// without dtmpi shows it too). Not counted among dtmpi's algorithms.
bool host_block(const void* buf, int count, int displ, MPI_Datatype t) {
  // the block's own address: at MPI_BOTTOM the displacement is the address
  return count <= 0 || !runtime::on_gpu(runtime::buffer_info(static_cast<const char*>(buf) + displ, t));
}

}  // namespace

Result<bool> alltoallw_self(const void* sb, const int* sc, const int* sd, const MPI_Datatype* st, void* rb,
                            const int* rc, const int* rd, const MPI_Datatype* rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (!host_block(rb, rc[0], rd[0], rt[0]) || (!in_place && !host_block(sb, sc[0], sd[0], st[0]))) return false;
  int code = MPI_SUCCESS;
  if (!in_place && (sc[0] > 0 || rc[0] > 0)) {  // in place, the block is its own destination
    VSide send = wside(sb, 1, sc, sd, st, true, comm, code);
    // a shorter message leaves the rest of the receive block as it was: a
    // packed receive side then holds the block's old bytes first
    const bool shorter = block_bytes(sc[0], st[0]) < block_bytes(rc[0], rt[0]);
    VSide recv = wside(rb, 1, rc, rd, rt, shorter, comm, code);
    const int64_t sent = send.blocks.bytes[0], room = recv.blocks.bytes[0];
    if (sent > room && code == MPI_SUCCESS) code = MPI_ERR_TRUNCATE;
    if (const int64_t n = std::min(sent, room); n > 0)
      std::memmove(recv.data + recv.blocks.offset[0], send.data + send.blocks.offset[0], static_cast<size_t>(n));
    if (recv.is_packed && code == MPI_SUCCESS) code = unpacker(recv, comm)();
  }
  if (!req) {
    if (code != MPI_SUCCESS) return Error{code, "MPI_Alltoallw on one rank"};
    return true;
  }
  DTMPI_TRY(transport::start_with_request(std::make_unique<Finished>(code), req));
  return true;
}


}  // namespace dtmpi::coll::detail
