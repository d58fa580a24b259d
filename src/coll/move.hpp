// The frame of the data-moving collectives (move_ops.cpp, rooted_ops.cpp):
// bytes of `block` per rank, cut into chunks of at most `cap` bytes of every
// block (the same cut on every rank: it depends on the block, the scratch
// and the regions only). Within a chunk a scratch slot holds `regions`
// pieces back to back, so a run of consecutive blocks is one contiguous range.
//
// The v forms (Allgatherv, Gatherv, Scatterv, Alltoallv) give each rank's
// block its own size and place (Blocks); `block` is then the largest block
// (every rank knows it: Allgatherv's counts are everyone's, the others agree
// on it first -- coll_move_v.cpp), a chunk cuts the same byte range
// [c * cap, (c + 1) * cap) of every block, and pieces lie `cap` apart, since
// a rank that forwards or reads a piece need not know the other blocks' sizes.
#pragma once
#include <algorithm>
#include <vector>

#include "coll/ops.hpp"

namespace dtmpi::coll {

// Rank j's block on one side of a v form: its bytes and where they start in
// that side's contiguous bytes.
struct Blocks {
  std::vector<int64_t> bytes, offset;
  bool empty() const { return bytes.empty(); }
};

// The layout of a v form on this rank: the blocks of the side that holds n
// of them (sends: a scatter's root, alltoall; recvs: allgather, a gather's
// root, alltoall) and the size of a one-block side (a gather's send, a
// scatter's receive).
struct VLayout {
  Blocks sends, recvs;
  int64_t own = 0;
};

class ChunkedMove : public CollOp {
 public:
  ChunkedMove(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t block)
      : CollOp(std::move(st), static_cast<uint64_t>((block + cap - 1) / cap)), send_(send), recv_(recv),
        block_(block), cap_(cap) {}
  ChunkedMove(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t largest,
              VLayout v)
      : ChunkedMove(std::move(st), cap, send, recv, largest) {
    v_ = std::move(v);
    varied_ = true;
  }

  // Chunk cap for `regions` pieces per slot (multiples of 64 bytes); 0: the
  // scratch is too small for so many regions (the system MPI serves).
  static int64_t cap_for(const CommState& st, int regions) {
    return static_cast<int64_t>(st.seg->scratch_bytes() / static_cast<size_t>(regions)) / 64 * 64;
  }

 protected:
  int64_t off() const { return static_cast<int64_t>(chunk_) * cap_; }
  // this chunk's bytes of a block of `block_` bytes (the uniform forms)
  size_t len() const { return static_cast<size_t>(std::min(cap_, block_ - off())); }
  // this chunk's bytes of block j on the receive / send side, and of the one-block side
  size_t rlen(int j) const { return varied_ ? clip(v_.recvs.bytes[j]) : len(); }
  size_t slen(int j) const { return varied_ ? clip(v_.sends.bytes[j]) : len(); }
  size_t own_len() const { return varied_ ? clip(v_.own) : len(); }
  // piece k of rank r's slot in this chunk
  char* at(int r, int64_t k) const {
    return seg().scratch(r, seq_) + k * (varied_ ? cap_ : static_cast<int64_t>(len()));
  }
  // this chunk of block j of the receive / send buffer, and of a one-block
  // side (a rank's own send block, a scatter's receive block); null where the
  // side is (a zero-byte side may be a null buffer: no arithmetic on it)
  char* rblock(int j) const {
    return recv_ ? recv_ + (varied_ ? v_.recvs.offset[j] : j * block_) + off() : nullptr;
  }
  const char* sblock(int j) const {
    return send_ ? send_ + (varied_ ? v_.sends.offset[j] : j * block_) + off() : nullptr;
  }
  const char* own_send() const { return send_ ? send_ + off() : nullptr; }
  char* own_recv() const { return recv_ ? recv_ + off() : nullptr; }

  const char* send_;
  char* recv_;
  int64_t block_, cap_;
  bool varied_ = false;  // a v form (the same on every rank)
  VLayout v_;

 private:
  size_t clip(int64_t bytes) const { return bytes > off() ? static_cast<size_t>(std::min(cap_, bytes - off())) : 0; }
};

}  // namespace dtmpi::coll
