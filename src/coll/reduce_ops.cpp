// Allreduce (recursive doubling, reduce-scatter + allgather, tree, K-nomial,
// chain) and Reduce (binomial and K-nomial trees, flat, chain) on the node segment. Buffers are contiguous
// (the caller checks); chunks are whole elements. The order of operands
// follows MPI's rule for non-commutative ops: a part from lower ranks is
// always the left operand, and every part covers a contiguous rank range.
#include <algorithm>
#include <cstring>

#include "coll/chunked.hpp"

namespace dtmpi::coll {

namespace {

using Seg = transport::NodeSegment;

// Allreduce by recursive doubling. Non-powers of two first fold pairs
// (2i, 2i+1) for i < n - p2 (so every survivor holds a contiguous rank range)
// and hand the result back at the end. Regions: 0 input of a folded-out
// rank, 1+k round k, 1+rounds the result for the folded-out partner.
class RecursiveDoubling final : public ChunkedReduction {
 public:
  using ChunkedReduction::ChunkedReduction;

 private:
  bool advance() override {
    int p2 = 1, rounds = 0;
    while (p2 * 2 <= n()) p2 *= 2, ++rounds;
    const int rem = n() - p2;
    const int newrank = me() < 2 * rem ? (me() % 2 ? me() / 2 : -1) : me() - rem;
    char* acc = out();
    if (phase_ == 0) {
      if (in_ != out_) std::memcpy(acc, in(), bytes());
      phase_ = 1;
      if (newrank < 0) {
        Seg::put(region(me(), 0), acc, bytes());
        publish(0);
        phase_ = 100;
      }
    }
    if (phase_ == 100) {  // folded out: wait for the partner's result
      if (!ready(me() + 1, static_cast<unsigned>(1 + rounds))) return false;
      Seg::get(acc, region(me() + 1, 1 + rounds), bytes());
      return true;
    }
    if (phase_ == 1) {
      if (me() < 2 * rem) {  // odd: take the even partner's part (lower ranks: left)
        if (!ready(me() - 1, 0)) return false;
        check(r_.left(region(me() - 1, 0), acc, m()));
      }
      phase_ = 2;
    }
    // phase 2 + 2k: publish round k; 3 + 2k: combine with the partner's
    for (; index_ < rounds; ++index_) {
      const int pnew = newrank ^ (1 << index_);
      const int partner = pnew < rem ? pnew * 2 + 1 : pnew + rem;
      const unsigned ph = static_cast<unsigned>(1 + index_);
      if (phase_ == 2) {
        Seg::put(region(me(), 1 + index_), acc, bytes());
        publish(ph);
        phase_ = 3;
      }
      if (!ready(partner, ph)) return false;
      if (pnew < newrank)
        check(r_.left(region(partner, 1 + index_), acc, m()));
      else
        check(r_.right(acc, region(partner, 1 + index_), m(), tmp()));
      phase_ = 2;
    }
    if (me() < 2 * rem) {
      Seg::put(region(me(), 1 + rounds), acc, bytes());
      publish(static_cast<unsigned>(1 + rounds));
    }
    return true;
  }
};

// Allreduce as a reduce-scatter + allgather through the segment: every rank
// publishes its input (region 0); rank i folds block i of all inputs in rank
// order, right to left (x0 op (x1 op ... xn-1): the same bits on every rank
// and in every run) into region 1; every rank reads every block.
class ReduceScatterAllgather final : public ChunkedReduction {
 public:
  using ChunkedReduction::ChunkedReduction;

 private:
  int64_t block_lo(int i) const { return m() / n() * i + std::min<int64_t>(i, m() % n()); }
  int64_t block_len(int i) const { return m() / n() + (i < m() % n() ? 1 : 0); }
  bool advance() override {
    if (phase_ == 0) {
      Seg::put(region(me(), 0), in(), bytes());
      publish(0);
      phase_ = 1;
    }
    if (phase_ == 1) {
      for (; index_ < n(); ++index_)
        if (!ready(index_, 0)) return false;
      const int64_t lo = block_lo(me()), len = block_len(me());
      if (len > 0) {
        char* dst = region(me(), 1) + lo * r_.elem;
        std::memcpy(dst, region(n() - 1, 0) + lo * r_.elem, static_cast<size_t>(len * r_.elem));
        for (int j = n() - 2; j >= 0; --j) check(r_.left(region(j, 0) + lo * r_.elem, dst, len));
      }
      publish(1);
      phase_ = 2;
      index_ = 0;
    }
    for (; index_ < n(); ++index_) {
      if (!ready(index_, 1)) return false;
      const int64_t lo = block_lo(index_);
      Seg::get(out() + lo * r_.elem, region(index_, 1) + lo * r_.elem, static_cast<size_t>(block_len(index_) * r_.elem));
    }
    return true;
  }
};

// Allreduce as a binomial reduce to rank 0 (region 0: a subtree's part)
// followed by a binomial bcast from it (region 1).
class TreeAllreduce final : public ChunkedReduction {
 public:
  using ChunkedReduction::ChunkedReduction;

 private:
  bool advance() override {
    char* acc = out();
    if (phase_ == 0) {
      if (in_ != out_) std::memcpy(acc, in(), bytes());
      phase_ = 1;
    }
    if (phase_ == 1) {
      if (!fold_children(me(), 0, acc, 0)) return false;
      if (me() != 0) {
        Seg::put(region(me(), 0), acc, bytes());
        publish(0);
      }
      phase_ = 2;
    }
    if (me() == 0) {
      Seg::put(region(0, 1), acc, bytes());
      publish(1);
      return true;
    }
    const int parent = parent_of(me());
    if (!ready(parent, 1)) return false;
    if (has_children(me(), n())) {
      Seg::put(region(me(), 1), region(parent, 1), bytes());
      publish(1);
    }
    Seg::get(acc, region(parent, 1), bytes());
    return true;
  }
};

// Allreduce for the latency-bound sizes: a reduce to rank 0 along a K-nomial
// or K-ary tree (a parent pulls each child's part, ascending, from its
// region 0), then every rank reads rank 0's result (phase 1) -- log_k(n)
// levels and one read, where recursive doubling takes log2(n) rounds of
// exchanges.
class RootReadAllreduce final : public ChunkedReduction {
 public:
  RootReadAllreduce(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count,
                    const Reducer& r, const void* in, void* out, Tree tree)
      : ChunkedReduction(std::move(st), chunks, cap, regions, count, r, in, out), tree_(tree) {}

 private:
  bool inline_only() const override { return bytes() <= transport::kInlineBytes; }
  bool advance() override {
    char* acc = out();
    if (phase_ == 0) {
      if (in_ != out_) std::memcpy(acc, in(), bytes());
      phase_ = 1;
    }
    // a few bytes travel with the flag (one line: transport::InlineSlot)
    const bool inline_parts = inline_only();
    if (phase_ == 1) {
      if (inline_parts) {
        for (int c; (c = tree_.child(me(), n(), index_)) >= 0; ++index_) {
          char part[transport::kInlineBytes];
          if (!Seg::get_inline(seg().inline_slot(c, seq_), transport::flag_value(seq_, 0), part, bytes()))
            return false;
          check(r_.right(acc, part, m(), tmp()));
        }
        Seg::put_inline(seg().inline_slot(me(), seq_), acc, bytes(), transport::flag_value(seq_, me() == 0 ? 1 : 0));
      } else {
        if (!fold_children(me(), 0, acc, 0, tree_)) return false;
        Seg::put(region(me(), 0), acc, bytes());
        publish(me() == 0 ? 1 : 0);
      }
      if (me() == 0) return true;
      phase_ = 2;
    }
    if (inline_parts) return Seg::get_inline(seg().inline_slot(0, seq_), transport::flag_value(seq_, 1), acc, bytes());
    if (!ready(0, 1)) return false;
    Seg::get(acc, region(0, 0), bytes());
    return true;
  }
  Tree tree_;
};

// Reduce: a tree (binomial, K-nomial or K-ary) rooted at `root` for a
// commutative op, at rank 0 for a non-commutative one (subtrees are then
// contiguous rank ranges), whose result the root then reads (region 1).
// Flat: the root folds all inputs in rank order.
class Reduce final : public ChunkedReduction {
 public:
  Reduce(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count, const Reducer& r,
         const void* in, void* out, int root, bool flat, Tree tree)
      : ChunkedReduction(std::move(st), chunks, cap, regions, count, r, in, out), root_(root), flat_(flat),
        tree_(tree) {}

 private:
  bool advance() override { return flat_ ? flat() : tree(); }
  bool tree() {
    const int tree_root = r_.commutative ? root_ : 0;
    const int vr = (me() - tree_root + n()) % n();
    char* acc = me() == root_ ? out() : acc_buf();
    if (phase_ == 0) {
      if (tree_.child(vr, n(), 0) < 0 && vr != 0) {  // a leaf publishes its input as it is
        Seg::put(region(me(), 0), in(), bytes());
        publish(0);
        phase_ = 2;
      } else {
        if (acc != in()) std::memcpy(acc, in(), bytes());
        phase_ = 1;
      }
    }
    if (phase_ == 1) {
      if (!fold_children(vr, tree_root, acc, 0, tree_)) return false;
      phase_ = 2;
      if (vr != 0) {
        Seg::put(region(me(), 0), acc, bytes());
        publish(0);
      } else if (me() == root_) {
        return true;
      } else {  // rank 0 of a non-commutative op: the root reads the result
        Seg::put(region(me(), 1), acc, bytes());
        publish(1);
        return true;
      }
    }
    if (me() != root_) return true;
    if (!ready(0, 1)) return false;
    Seg::get(out(), region(0, 1), bytes());
    return true;
  }
  bool flat() {
    if (me() != root_) {
      Seg::put(region(me(), 0), in(), bytes());
      publish(0);
      return true;
    }
    for (; index_ < n(); ++index_)
      if (index_ != me() && !ready(index_, 0)) return false;
    auto part = [&](int j) -> const char* { return j == me() ? in() : region(j, 0); };
    char* acc = acc_buf();
    std::memcpy(acc, part(n() - 1), bytes());
    for (int j = n() - 2; j >= 0; --j) check(r_.left(part(j), acc, m()));
    std::memcpy(out(), acc, bytes());
    return true;
  }
  int root_;
  bool flat_;
  Tree tree_;
};

// Reduce along a chain (pipelined): relative rank vr folds its input with
// vr + 1's part (region 0) and publishes the result for vr - 1, segment by
// segment; the last rank publishes its input as it is. A rank moves on to
// its next segment (a later scratch slot) while vr - 1 still reads this one,
// so the segments pipeline up the chain: n - 1 hops of the first segment,
// then one segment per step. The chain ends at the root for a commutative
// op; for a non-commutative one it ends at rank 0 (x0 op (x1 op (...)): the
// lower ranks' part always the left operand), whose result the root reads
// (region 1) -- there the root takes its next segment only after it read the
// last one's result, so ranks 0 to root pipeline one segment per round trip
// (a non-commutative op with a root other than 0: slower than the model says).
//
// Allreduce (`all`): the same chain ended at rank 0, whatever the op, and
// each segment's result sent on around the ring -- rank 0 to n-1, n-2, ...,
// 1, every rank reading the copy of rank me+1 (region 1), the rank it reads
// the parts from. Chunk c carries the reduction of segment c and the
// broadcast of segment c-1 (one chunk more than segments), so the two
// pipelines run at once: rank 0 first hands out the result it finished in
// chunk c-1 (rank n-1 waits for it before its next segment), then folds
// segment c; the others fold first, then forward. A chunk finishes at a rank
// only with both halves, so rank n-1 starts segment c+1 one hop after rank 0
// finished segment c-1's fold: a segment every n/2 hops, where a chain
// Reduce and a chain Bcast one after the other take two passes.
class ChainReduce final : public ChunkedReduction {
 public:
  ChainReduce(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count, const Reducer& r,
              const void* in, void* out, int root, bool all, int64_t segments)
      : ChunkedReduction(std::move(st), chunks, cap, regions, count, r, in, out), root_(root), all_(all),
        segments_(segments) {}

 private:
  bool advance() override {
    if (!all_) return reduce();
    const bool reduce_here = static_cast<int64_t>(chunk_) < segments_, bcast_here = n() > 1 && chunk_ > 0;
    // index_: whether this rank's first half of the chunk is done
    const bool bcast_first = me() == 0;
    if (index_ == 0) {
      if (bcast_first ? bcast_here && !forward_result() : reduce_here && !reduce()) return false;
      index_ = 1;
    }
    return bcast_first ? !reduce_here || reduce() : !bcast_here || forward_result();
  }
  bool reduce() {
    const int end = r_.commutative ? root_ : 0;
    const int vr = (me() - end + n()) % n();
    if (phase_ == 0) {
      if (n() == 1) {
        if (in() != out()) std::memcpy(out(), in(), bytes());
        return true;
      }
      if (vr == n() - 1) {  // the chain's start: its input as it is
        Seg::put(region(me(), 0), in(), bytes());
        publish(0);
        phase_ = 2;
      } else {
        phase_ = 1;
      }
    }
    if (phase_ == 1) {
      const int next = (vr + 1 + end) % n();
      if (!ready(next, 0)) return false;
      // acc = my input op the chain's part behind me (left operand the lower
      // rank's), built in my region for vr - 1; the root's in its own
      // buffer first (its input may be its output: MPI_IN_PLACE)
      const bool result_here = vr == 0 && me() == root_;
      char* acc = result_here ? acc_buf() : region(me(), vr == 0 ? 1 : 0);
      std::memcpy(acc, region(next, 0), bytes());
      check(r_.left(in(), acc, m()));
      if (result_here) {
        std::memcpy(out(), acc, bytes());
        return true;
      }
      publish(vr == 0 ? 1 : 0);  // vr 0 not the root: rank 0 of a non-commutative op, the root reads it
      phase_ = 2;
    }
    // the root where the chain ended elsewhere reads the result
    if (me() != root_) return true;
    if (!ready(end, 1)) return false;
    Seg::get(out(), region(end, 1), bytes());
    return true;
  }
  // The allreduce's broadcast half: segment chunk_ - 1's result from rank 0
  // around the ring (region 1); rank 1 ends it.
  bool forward_result() {
    const int64_t first = (static_cast<int64_t>(chunk_) - 1) * cap_;
    const size_t len = static_cast<size_t>(std::min<int64_t>(cap_, count_ - first) * r_.elem);
    char* result = out_ + first * r_.elem;
    if (me() == 0) {
      Seg::put(region(0, 1), result, len);
      publish(1);
      return true;
    }
    const int from = (me() + 1) % n();
    if (!ready(from, 1)) return false;
    if (me() == 1) {
      Seg::get(result, region(from, 1), len);
      return true;
    }
    Seg::put(region(me(), 1), region(from, 1), len);  // rank me - 1 reads it here
    publish(1);
    Seg::get(result, region(me(), 1), len);
    return true;
  }
  int root_;
  bool all_;
  int64_t segments_;
};

// The chain's segment of one of its two regions (ops.hpp's chain_segment),
// in whole elements; an element larger than a region leaves the call to the
// system MPI. Allreduce (`all`): a chunk more, for the last segment's broadcast.
std::unique_ptr<CollOp> make_chain(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out, int count,
                                   const Reducer& r, int root, bool all) {
  const int64_t room = static_cast<int64_t>(st->seg->scratch_bytes() / 2) - 64;
  if (r.elem <= 0 || r.elem > room) return nullptr;
  const int64_t cap = std::max<int64_t>(1, static_cast<int64_t>(chain_segment(static_cast<size_t>(room), 1, a)) / r.elem);
  const int64_t segments = (count + cap - 1) / cap;
  const uint64_t chunks = static_cast<uint64_t>(segments + (all && st->size > 1 ? 1 : 0));
  return std::make_unique<ChainReduce>(std::move(st), chunks, cap, 2, count, r, in, out, root, all, segments);
}

}  // namespace

std::unique_ptr<CollOp> make_allreduce(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out,
                                       int count, const Reducer& r) {
  if (count <= 0) return nullptr;
  switch (a) {
    case Algorithm::kRecursiveDoubling: {
      int rounds = 0;
      while ((2 << rounds) <= st->size) ++rounds;
      return build<RecursiveDoubling>(std::move(st), rounds + 2, count, r, in, out);
    }
    case Algorithm::kReduceScatterAllgather:
      return build<ReduceScatterAllgather>(std::move(st), 2, count, r, in, out);
    case Algorithm::kTree:
      return build<TreeAllreduce>(std::move(st), 2, count, r, in, out);
    case Algorithm::kKnomial4:
    case Algorithm::kKnomial8:
    case Algorithm::kKary2:
    case Algorithm::kKary4:
    case Algorithm::kKary8:
      return build<RootReadAllreduce>(std::move(st), 1, count, r, in, out, *tree_of(a));
    case Algorithm::kChain:
    case Algorithm::kChain4K:
    case Algorithm::kChain16K:
      return make_chain(std::move(st), a, in, out, count, r, 0, true);
    default:
      return nullptr;
  }
}

std::unique_ptr<CollOp> make_reduce(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out, int count,
                                    const Reducer& r, int root) {
  if (count <= 0) return nullptr;
  if (is_chain(a)) return make_chain(std::move(st), a, in, out, count, r, root, false);
  const std::optional<Tree> tree = tree_of(a);
  if (a != Algorithm::kFlat && !tree) return nullptr;
  return build<Reduce>(std::move(st), 2, count, r, in, out, root, a == Algorithm::kFlat, tree.value_or(Tree{}));
}

}  // namespace dtmpi::coll
