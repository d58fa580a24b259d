// The frame of the data-moving collectives (move_ops.cpp, rooted_ops.cpp):
// bytes of `block` per rank, cut into chunks of at most `cap` bytes of every
// block (the same cut on every rank: it depends on the block, the scratch
// and the regions only). Within a chunk a scratch slot holds `regions`
// pieces of `len` bytes back to back, so a run of consecutive blocks is one
// contiguous range.
#pragma once
#include <algorithm>

#include "coll/ops.hpp"

namespace dtmpi::coll {

class ChunkedMove : public CollOp {
 public:
  ChunkedMove(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t block)
      : CollOp(std::move(st), static_cast<uint64_t>((block + cap - 1) / cap)), send_(send), recv_(recv),
        block_(block), cap_(cap) {}

  // Chunk cap for `regions` pieces per slot (multiples of 64 bytes); 0: the
  // scratch is too small for so many regions (the system MPI serves).
  static int64_t cap_for(const CommState& st, int regions) {
    return static_cast<int64_t>(st.seg->scratch_bytes() / static_cast<size_t>(regions)) / 64 * 64;
  }

 protected:
  int64_t off() const { return static_cast<int64_t>(chunk_) * cap_; }
  size_t len() const { return static_cast<size_t>(std::min(cap_, block_ - off())); }
  // piece k of rank r's slot in this chunk
  char* at(int r, int64_t k) const { return seg().scratch(r, seq_) + k * static_cast<int64_t>(len()); }
  // this chunk of block j of the receive / send buffer
  char* rblock(int j) const { return recv_ + j * block_ + off(); }
  const char* sblock(int j) const { return send_ + j * block_ + off(); }

  const char* send_;
  char* recv_;
  int64_t block_, cap_;
};

}  // namespace dtmpi::coll
