// The sides of a data-moving collective as contiguous bytes (coll_move.cpp,
// coll_move_v.cpp): the user's buffer itself where its type lays the bytes
// out back to back, else a packed copy -- dtmpi's CPU packer, or the system
// MPI's MPI_Pack for a type it cannot plan -- unpacked into the user's layout
// after the operation's last chunk.
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "coll/entry.hpp"
#include "coll/move.hpp"

namespace dtmpi::coll::detail {

// A side of one or n uniform blocks: `count` elements of `type`.
struct Side {
  char* data = nullptr;
  std::vector<char> packed;
  bool is_packed = false;
  void* user = nullptr;
  int64_t count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

// A side of n blocks of their own sizes and places (the v and w forms):
// block j is counts[j] elements of types[j] at disp[j] bytes into the user's
// buffer (the v forms: one type, displacements in its extents); `blocks` says
// where each lies in `data`.
struct VSide {
  char* data = nullptr;
  std::vector<char> packed;
  bool is_packed = false;
  void* user = nullptr;
  std::vector<int> counts;
  std::vector<int64_t> disp;
  std::vector<MPI_Datatype> types;
  Blocks blocks;
};

// Whether `count` of `t` are their bytes back to back from the buffer's start.
bool contiguous(int64_t count, MPI_Datatype t);
// `read`: the side's bytes are input too (the send side; MPI_IN_PLACE): packed
// in first. A failed pack sets `rc` (the call's error; the protocol still runs).
Side side(const void* buf, int64_t count, MPI_Datatype t, bool read, MPI_Comm comm, int& rc);
VSide vside(const void* buf, int n, const int* counts, const int* displs, MPI_Datatype t, bool read, MPI_Comm comm,
            int& rc);
// The w form (Alltoallw): block j is counts[j] elements of types[j] at
// displs[j] bytes. A block of no elements may name MPI_DATATYPE_NULL.
VSide wside(const void* buf, int n, const int* counts, const int* displs, const MPI_Datatype* types, bool read,
            MPI_Comm comm, int& rc);
// The bytes of block j of such a call (0 for no elements, whatever the type).
int64_t block_bytes(int count, MPI_Datatype t);

// What unpacks a packed receive side into the user's layout.
std::function<int()> unpacker(const Side& s, MPI_Comm comm);
std::function<int()> unpacker(const VSide& s, MPI_Comm comm);

// Starts `op` (null: the system MPI serves) owning the packed sides; a packed
// receive side is unpacked at the end. `pack_rc` becomes the call's error (a
// failed pack still runs the protocol: the peers are in it).
template <class SendSide, class RecvSide>
Result<bool> launch(std::unique_ptr<CollOp> op, SendSide send, RecvSide recv, int pack_rc, MPI_Comm comm,
                    MPI_Request* req) {
  if (!op) return false;
  if (recv.is_packed) {
    // after what the operation itself runs last (Bruck's Alltoallv copies its
    // receive blocks out of their padded places first)
    auto unpack = unpacker(recv, comm);
    if (op->finally)
      op->finally = [first = std::move(op->finally), unpack = std::move(unpack)] {
        const int rc = first();
        return rc != MPI_SUCCESS ? rc : unpack();
      };
    else
      op->finally = std::move(unpack);
  }
  op->keep.push_back(std::move(send.packed));  // moving a vector keeps its storage: the pointers stay valid
  op->keep.push_back(std::move(recv.packed));
  op->error = pack_rc;
  return start(std::move(op), req);
}

}  // namespace dtmpi::coll::detail
