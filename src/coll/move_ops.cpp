// Allgather (flat, ring, recursive doubling / Bruck) and Alltoall (pairwise,
// flat, Bruck) on the node segment, over contiguous bytes (coll_move.cpp packs).
// Every rank writes each piece of its slot once per chunk and raises its
// `ready` flag by phases; a reader pulls (get) what a phase promises. Flags
// only grow and pieces are never rewritten within a chunk, so a later phase
// also vouches for everything an earlier one did.
#include <algorithm>
#include <cstring>

#include "coll/move.hpp"
#include "coll/trees.hpp"

namespace dtmpi::coll {

namespace {

using Seg = transport::NodeSegment;

// Allgather. Flat: every rank publishes its block (piece 0) and reads all.
// Ring and recursive doubling keep piece j = block j (absolute ranks):
// ring step k reads from the left neighbour the block it got at step k-1
// (phase k-1); recursive doubling (a power of two) reads in round k the 2^k
// blocks of rank me^2^k, Bruck (other sizes) the blocks me+2^k.. of rank
// me+2^k, which holds [itself, itself + 2^k) after round k-1 (phase k).
class Allgather final : public ChunkedMove {
 public:
  Allgather(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t block, Algorithm a)
      : ChunkedMove(std::move(st), cap, send, recv, block), alg_(a) {}
  Allgather(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t largest, VLayout v,
            Algorithm a)
      : ChunkedMove(std::move(st), cap, send, recv, largest, std::move(v)), alg_(a) {}

 private:
  bool advance() override {
    if (phase_ == 0) {
      const int piece = alg_ == Algorithm::kFlat ? 0 : me();
      Seg::put(at(me(), piece), own_send(), rlen(me()));
      publish(0);
      if (own_send() != rblock(me())) Seg::get(rblock(me()), own_send(), rlen(me()));
      phase_ = 1;
      index_ = alg_ == Algorithm::kRing ? 1 : 0;
    }
    switch (alg_) {
      case Algorithm::kFlat:
        for (; index_ < n(); ++index_) {
          if (index_ == me()) continue;
          if (!ready(index_, 0)) return false;
          Seg::get(rblock(index_), at(index_, 0), rlen(index_));
        }
        return true;
      case Algorithm::kRing:
        for (; index_ < n(); ++index_) {  // step index_
          const int left = (me() - 1 + n()) % n(), j = (me() - index_ + n()) % n();
          const unsigned ph = static_cast<unsigned>(index_ - 1);
          if (!ready(left, ph)) return false;
          if (index_ + 1 < n()) {  // the right neighbour reads it at the next step
            Seg::put(at(me(), j), at(left, j), rlen(j));
            publish(static_cast<unsigned>(index_));
          }
          Seg::get(rblock(j), at(left, j), rlen(j));
        }
        return true;
      default:
        return doubling();
    }
  }
  bool doubling() {
    const bool pow2 = (n() & (n() - 1)) == 0;
    for (; (1 << index_) < n(); ++index_) {
      const int dist = 1 << index_;
      const int from = pow2 ? me() ^ dist : (me() + dist) % n();
      const int first = pow2 ? from & ~(dist - 1) : from;
      const int blocks = pow2 ? dist : std::min(dist, n() - dist);
      if (!ready(from, static_cast<unsigned>(index_))) return false;
      const bool forward = 2 * dist < n();  // a later round reads them from here
      for (int i = 0; i < blocks; ++i) {
        const int j = (first + i) % n();
        if (forward) Seg::put(at(me(), j), at(from, j), rlen(j));
        Seg::get(rblock(j), at(from, j), rlen(j));
      }
      if (forward) publish(static_cast<unsigned>(index_ + 1));
    }
    return true;
  }
  Algorithm alg_;
};

// Alltoall: every rank publishes its n send blocks (piece j: for rank j) and
// reads piece `me` of every rank; pairwise in the order me-1, me-2, ...
// (each step a different source per rank), flat in the order me+1, me+2, ... In place the send
// blocks are the receive buffer's, all published before any is overwritten.
class Alltoall final : public ChunkedMove {
 public:
  Alltoall(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t block, bool pairwise)
      : ChunkedMove(std::move(st), cap, send, recv, block), pairwise_(pairwise) {}
  Alltoall(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t largest, VLayout v,
           bool pairwise)
      : ChunkedMove(std::move(st), cap, send, recv, largest, std::move(v)), pairwise_(pairwise) {}

 private:
  bool advance() override {
    if (phase_ == 0) {
      for (int j = 0; j < n(); ++j)
        if (j != me()) Seg::put(at(me(), j), sblock(j), slen(j));
      publish(0);
      if (send_ != recv_) Seg::get(rblock(me()), sblock(me()), rlen(me()));
      phase_ = 1;
      index_ = 1;
    }
    for (; index_ < n(); ++index_) {
      const int from = pairwise_ ? (me() - index_ + n()) % n() : (me() + index_) % n();
      if (!ready(from, 0)) return false;
      Seg::get(rblock(from), at(from, me()), rlen(from));
    }
    return true;
  }
  bool pairwise_;
};

// Alltoall by Bruck's algorithm (radix k; coll/trees.hpp's bruck_rounds):
// index i of rank p's rotated blocks is its send block for rank p + i, and
// round t moves the indices whose digit of `place` is `digit` on by `shift`
// ranks, so after one move per non-zero digit index i lies at rank p + i:
// rank q ends with the block of rank q - i at index i (the inverse rotation:
// each goes straight into its receive block). In the segment a round is a
// pull: rank q reads round t's pieces from rank q - shift once its flag says
// the round's level (its digit place: the k-1 rounds of a place read
// different ranks, none waits for another, so radix k takes ceil(log_k(n))
// waits for k-1 flags each). Every piece is written once per chunk, when its
// holder gets it: a send block at the start into its index's first round, a
// block received at level d into its index's next round (published with
// phase d + 1, after the level's last round) or, after its last move, into
// the receive buffer. In place the send blocks are all in the slot before
// the receive buffer is written.
class BruckAlltoall final : public ChunkedMove {
 public:
  BruckAlltoall(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t block, int k,
                std::vector<BruckRound> rounds)
      : ChunkedMove(std::move(st), cap, send, recv, block), k_(k), rounds_(std::move(rounds)) {}

 private:
  char* piece(int r, int t, int i) const { return at(r, rounds_[t].first + bruck_position(i, rounds_[t], k_)); }
  bool advance() override {
    if (phase_ == 0) {
      for (int i = 1; i < n(); ++i)
        Seg::put(piece(me(), bruck_next_round(rounds_, i, -1, k_), i), sblock((me() + i) % n()), len());
      publish(0);
      if (send_ != recv_) Seg::get(rblock(me()), sblock(me()), len());
      phase_ = 1;
    }
    const int rounds = static_cast<int>(rounds_.size());
    for (; index_ < rounds; ++index_) {
      const BruckRound& r = rounds_[index_];
      const int from = (me() - r.shift + n()) % n();
      if (!ready(from, static_cast<unsigned>(r.level))) return false;
      // the indices whose digit is r.digit: runs of r.place every k places
      for (int64_t run = r.shift; run < n(); run += int64_t{r.place} * k_)
        for (int i = static_cast<int>(run); i < std::min<int64_t>(run + r.place, n()); ++i) {
          const char* got = piece(from, index_, i);
          const int next = bruck_next_round(rounds_, i, index_, k_);
          if (next >= 0)
            Seg::put(piece(me(), next, i), got, len());
          else
            Seg::get(rblock((me() - i + n()) % n()), got, len());
        }
      if (index_ + 1 < rounds && rounds_[index_ + 1].level != r.level) publish(static_cast<unsigned>(r.level + 1));
    }
    return true;
  }
  int k_;
  std::vector<BruckRound> rounds_;
};

}  // namespace

namespace {

// An allgather's chunk cap under `a`; 0 where `a` cannot serve.
int64_t allgather_cap(const CommState& st, Algorithm a) {
  if (a != Algorithm::kFlat && a != Algorithm::kRing && a != Algorithm::kRecursiveDoubling) return 0;
  // ring phases count the steps: at most 2^kPhaseBits - 1 of them
  if (a == Algorithm::kRing && st.size >= (1 << transport::kPhaseBits)) return 0;
  return ChunkedMove::cap_for(st, a == Algorithm::kFlat ? 1 : st.size);
}

}  // namespace

std::unique_ptr<CollOp> make_allgather(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                       int64_t block) {
  const int64_t cap = allgather_cap(*st, a);
  if (block <= 0 || cap <= 0) return nullptr;
  return std::make_unique<Allgather>(std::move(st), cap, send, recv, block, a);
}

std::unique_ptr<CollOp> make_allgatherv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                        VLayout v) {
  const int64_t largest = v.recvs.empty() ? 0 : *std::max_element(v.recvs.bytes.begin(), v.recvs.bytes.end());
  const int64_t cap = allgather_cap(*st, a);
  if (largest <= 0 || cap <= 0) return nullptr;
  return std::make_unique<Allgather>(std::move(st), cap, send, recv, largest, std::move(v), a);
}

namespace {

// Alltoallv by Bruck's exchange (radix 2 or 4), for small blocks: an
// intermediate rank forwards blocks whose sizes only their sender and
// receiver know, so every block travels padded to the largest (the same on
// every rank after the agreement): the send blocks copied into n padded
// places when the call starts (in place too: nothing is written before),
// Alltoall's Bruck over them, the receive blocks copied out after the last
// chunk. Null where Bruck's pieces do not fit the slot, or where the padded
// copies would pass 16 scratch slots (Bruck is for small blocks: one large
// block of a skewed call would make every rank allocate n times it).
std::unique_ptr<CollOp> bruck_alltoallv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                        int64_t largest, const VLayout& v) {
  const auto n = static_cast<size_t>(st->size), pad = static_cast<size_t>(largest);
  if (pad > 16 * st->seg->scratch_bytes() / n) return nullptr;
  std::vector<char> out(n * pad), in(n * pad);
  for (size_t j = 0; j < n; ++j)
    if (v.sends.bytes[j] > 0)
      std::memcpy(out.data() + j * pad, send + v.sends.offset[j], static_cast<size_t>(v.sends.bytes[j]));
  auto op = make_alltoall(std::move(st), a, out.data(), in.data(), largest);
  if (!op) return nullptr;
  op->finally = [recv, got = in.data(), blocks = v.recvs, pad] {
    for (size_t j = 0; j < blocks.bytes.size(); ++j)
      if (blocks.bytes[j] > 0) std::memcpy(recv + blocks.offset[j], got + j * pad, static_cast<size_t>(blocks.bytes[j]));
    return MPI_SUCCESS;
  };
  op->keep.push_back(std::move(out));  // moving a vector keeps its storage: the pointers stay valid
  op->keep.push_back(std::move(in));
  return op;
}

}  // namespace

std::unique_ptr<CollOp> make_alltoallv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                       int64_t largest, VLayout v) {
  if (largest > 0 && (a == Algorithm::kBruck || a == Algorithm::kBruck4)) {
    if (auto op = bruck_alltoallv(st, a, send, recv, largest, v)) return op;
    // a slot too small for Bruck's pieces, or blocks too large for it:
    // pairwise, which fits wherever the call was served (coll_move_v.cpp's
    // may_agree; the same on every rank)
    a = Algorithm::kPairwise;
  }
  if (largest <= 0 || (a != Algorithm::kPairwise && a != Algorithm::kFlat)) return nullptr;
  const int64_t cap = ChunkedMove::cap_for(*st, st->size);
  if (cap <= 0) return nullptr;
  return std::make_unique<Alltoall>(std::move(st), cap, send, recv, largest, std::move(v),
                                    a == Algorithm::kPairwise);
}

std::unique_ptr<CollOp> make_alltoall(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                      int64_t block) {
  if (block > 0 && (a == Algorithm::kBruck || a == Algorithm::kBruck4)) {
    const int k = radix_of(a);
    auto rounds = bruck_rounds(st->size, k);
    // a slot holds every round's pieces; the phases count the levels
    const int pieces = rounds.empty() ? 1 : rounds.back().first + rounds.back().pieces;
    const int64_t cap = ChunkedMove::cap_for(*st, pieces);
    if (cap <= 0 || rounds.size() >= (1u << transport::kPhaseBits)) return nullptr;
    return std::make_unique<BruckAlltoall>(std::move(st), cap, send, recv, block, k, std::move(rounds));
  }
  if (block <= 0 || (a != Algorithm::kPairwise && a != Algorithm::kFlat)) return nullptr;
  const int64_t cap = ChunkedMove::cap_for(*st, st->size);
  if (cap <= 0) return nullptr;
  return std::make_unique<Alltoall>(std::move(st), cap, send, recv, block, a == Algorithm::kPairwise);
}

}  // namespace dtmpi::coll
