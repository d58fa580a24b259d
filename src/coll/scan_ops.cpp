// Reduce_scatter_block and Reduce_scatter (flat), Scan and Exscan (linear, recursive doubling)
// on the node segment. Buffers are contiguous (the caller checks); chunks are
// whole elements of each block. Operands keep MPI's order for non-commutative
// ops: a part from lower ranks is always the left operand, and every part
// covers a contiguous rank range.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "coll/chunked.hpp"

namespace dtmpi::coll {

namespace {

using Seg = transport::NodeSegment;

// Reduce_scatter_block: every rank publishes the chunk of each of its n input
// blocks (region j: block j); rank i folds block i of all inputs in rank
// order, right to left (x0 op (x1 op ... xn-1)), straight into its result.
// In place the result overwrites the chunk of input block 0 this rank has
// already published. Reduce_scatter (uneven blocks, `counts` known on every
// rank): a chunk is the same element range of every block, a block shorter
// than it contributes what it has; in place, the result's chunk c overlaps
// only input chunks c' <= c, all published by then.
class ReduceScatterBlock final : public ChunkedReduction {
 public:
  ReduceScatterBlock(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count,
                     const Reducer& r, const void* in, void* out, std::vector<int64_t> counts = {})
      : ChunkedReduction(std::move(st), chunks, cap, regions, count, r, in, out), counts_(std::move(counts)) {
    int64_t at = 0;
    for (int64_t c : counts_) {
      displs_.push_back(at);
      at += c;
    }
  }

 private:
  // this chunk's elements of block j, and where block j starts
  int64_t mj(int j) const {
    return counts_.empty() ? m() : std::clamp<int64_t>(counts_[j] - first(), 0, cap_);
  }
  int64_t at(int j) const { return counts_.empty() ? j * count_ : displs_[j]; }
  bool advance() override {
    if (phase_ == 0) {
      for (int j = 0; j < n(); ++j)
        Seg::put(region(me(), j), in_ + (at(j) + first()) * r_.elem, static_cast<size_t>(mj(j) * r_.elem));
      publish(0);
      phase_ = 1;
    }
    for (; index_ < n(); ++index_)
      if (!ready(index_, 0)) return false;
    const int64_t mine = mj(me());
    if (mine == 0) return true;
    char* dst = out();
    std::memcpy(dst, region(n() - 1, me()), static_cast<size_t>(mine * r_.elem));
    for (int j = n() - 2; j >= 0; --j) check(r_.left(region(j, me()), dst, mine));
    return true;
  }
  std::vector<int64_t> counts_, displs_;
};

// Scan / Exscan, linear: rank i waits for rank i-1's inclusive prefix
// (region 0), folds its own input on the right and publishes its own.
class LinearScan final : public ChunkedReduction {
 public:
  LinearScan(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count, const Reducer& r,
             const void* in, void* out, bool exclusive)
      : ChunkedReduction(std::move(st), chunks, cap, regions, count, r, in, out), exclusive_(exclusive) {}

 private:
  bool advance() override {
    char* acc = acc_buf();  // the inclusive prefix up to this rank
    if (phase_ == 0) {
      std::memcpy(acc, in(), bytes());  // (in place: the input is in out(), read before it is overwritten)
      phase_ = 1;
    }
    if (me() > 0) {
      if (!ready(me() - 1, 0)) return false;
      check(r_.left(region(me() - 1, 0), acc, m()));
    }
    if (me() + 1 < n()) {
      Seg::put(region(me(), 0), acc, bytes());
      publish(0);
    }
    if (!exclusive_)
      std::memcpy(out(), acc, bytes());
    else if (me() > 0)
      std::memcpy(out(), region(me() - 1, 0), bytes());
    return true;
  }
  bool exclusive_;
};

// Scan / Exscan by recursive doubling: in round k every rank publishes its
// partial prefix P (region k: ranks max(0, me-2^k+1)..me) and folds on the
// left the one of rank me-2^k; Exscan also keeps E, the ranks below this one
// (in the result buffer: rank 0's stays as it is).
class RecursiveDoublingScan final : public ChunkedReduction {
 public:
  RecursiveDoublingScan(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count,
                        const Reducer& r, const void* in, void* out, bool exclusive)
      : ChunkedReduction(std::move(st), chunks, cap, regions, count, r, in, out), exclusive_(exclusive) {}

 private:
  bool advance() override {
    char* p = acc_buf();
    if (phase_ == 0) {
      std::memcpy(p, in(), bytes());
      phase_ = 1;
    }
    for (; (1 << index_) < n(); ++index_) {
      const int dist = 1 << index_;
      const unsigned ph = static_cast<unsigned>(index_);
      if (phase_ == 1) {
        if (me() + dist < n()) {
          Seg::put(region(me(), index_), p, bytes());
          publish(ph);
        }
        phase_ = 2;
      }
      if (me() - dist >= 0) {
        const int from = me() - dist;
        if (!ready(from, ph)) return false;
        const char* theirs = region(from, index_);
        if (exclusive_) {
          if (index_ == 0)
            std::memcpy(out(), theirs, bytes());
          else
            check(r_.left(theirs, out(), m()));
        }
        check(r_.left(theirs, p, m()));
      }
      phase_ = 1;
    }
    if (!exclusive_) std::memcpy(out(), p, bytes());
    return true;
  }
  bool exclusive_;
};

}  // namespace

std::unique_ptr<CollOp> make_reduce_scatter_block(std::shared_ptr<CommState> st, Algorithm a, const void* in,
                                                  void* out, int count, const Reducer& r) {
  if (count <= 0 || a != Algorithm::kFlat) return nullptr;
  const int n = st->size;
  return build<ReduceScatterBlock>(std::move(st), n, count, r, in, out);
}

std::unique_ptr<CollOp> make_reduce_scatter(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out,
                                            std::vector<int64_t> counts, const Reducer& r) {
  const int64_t largest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  if (largest <= 0 || largest > INT_MAX || a != Algorithm::kFlat) return nullptr;
  const int n = st->size;
  return build<ReduceScatterBlock>(std::move(st), n, static_cast<int>(largest), r, in, out, std::move(counts));
}

std::unique_ptr<CollOp> make_scan(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out, int count,
                                  const Reducer& r, bool exclusive) {
  if (count <= 0) return nullptr;
  if (a == Algorithm::kLinear) return build<LinearScan>(std::move(st), 1, count, r, in, out, exclusive);
  if (a != Algorithm::kRecursiveDoubling) return nullptr;
  int rounds = 0;
  while ((1 << rounds) < st->size) ++rounds;
  return build<RecursiveDoublingScan>(std::move(st), std::max(rounds, 1), count, r, in, out, exclusive);
}

}  // namespace dtmpi::coll
