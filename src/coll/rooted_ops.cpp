// Gather and Scatter (K-nomial trees of radix 2 -- the binomial tree -- 4
// and 8, K-ary trees of 2, 4 and 8 children, all with contiguous subtrees;
// flat) on the node segment, over contiguous
// bytes (coll_move.cpp packs). Ranks relative to the root (vr = me - root mod
// n) are the tree's (coll/trees.hpp): the subtree of vr is the contiguous
// range [vr, vr + knomial_subtree_size), so a subtree's blocks are one
// contiguous range of pieces (piece t: block of relative rank vr + t) and
// move with one copy.
#include <cstring>

#include "coll/move.hpp"
#include "coll/trees.hpp"

namespace dtmpi::coll {

namespace {

using Seg = transport::NodeSegment;

class Rooted : public ChunkedMove {
 public:
  // no tree: flat
  Rooted(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t block, int root,
         std::optional<Tree> tree)
      : ChunkedMove(std::move(st), cap, send, recv, block), root_(root), tree_(tree) {}
  // the v forms: flat only (a tree's inner ranks would forward blocks whose
  // sizes only the root knows)
  Rooted(std::shared_ptr<CommState> st, int64_t cap, const char* send, char* recv, int64_t largest, VLayout v,
         int root)
      : ChunkedMove(std::move(st), cap, send, recv, largest, std::move(v)), root_(root) {}

 protected:
  int vr() const { return (me() - root_ + n()) % n(); }
  int abs(int rel) const { return (rel + root_) % n(); }
  bool flat() const { return !tree_; }
  // blocks in the subtree of relative rank v
  int subtree(int v) const { return tree_->subtree(v, n()); }
  // child i of relative rank v, ascending (-1 past the last)
  int child(int v, int i) const { return tree_->child(v, n(), i); }
  int root_;
  std::optional<Tree> tree_;
};

// Gather: a rank copies its block (piece 0) and each child's subtree (pieces
// c - vr on: child c) into its slot, then publishes phase 0; the root reads
// its children's ranges into the receive buffer. Flat: every rank publishes
// its block, the root reads them all.
class Gather final : public Rooted {
 public:
  using Rooted::Rooted;

 private:
  bool advance() override {
    const int v = vr();
    if (v == 0) {
      if (phase_ == 0) {
        if (own_send() != rblock(root_)) Seg::get(rblock(root_), own_send(), rlen(root_));
        phase_ = 1;
        index_ = flat() ? 1 : 0;
      }
      if (flat()) {
        for (; index_ < n(); ++index_) {
          if (!ready(abs(index_), 0)) return false;
          Seg::get(rblock(abs(index_)), at(abs(index_), 0), rlen(abs(index_)));
        }
        return true;
      }
      for (int c; (c = child(0, index_)) >= 0; ++index_) {
        if (!ready(abs(c), 0)) return false;
        for (int t = 0; t < subtree(c); ++t) Seg::get(rblock(abs(c + t)), at(abs(c), t), len());
      }
      return true;
    }
    if (phase_ == 0) {
      Seg::put(at(me(), 0), own_send(), own_len());
      phase_ = 1;
    }
    if (!flat()) {
      for (int c; (c = child(v, index_)) >= 0; ++index_) {
        if (!ready(abs(c), 0)) return false;
        Seg::put(at(me(), c - v), at(abs(c), 0), static_cast<size_t>(subtree(c)) * len());
      }
    }
    publish(0);
    return true;
  }
};

// Scatter: the root publishes the blocks of relative ranks 1..n-1 (piece t:
// relative rank t); a rank with children copies its subtree's range from its
// parent into its slot (piece 0: its own block) and publishes it. Flat: every
// rank reads its piece of the root's slot.
class Scatter final : public Rooted {
 public:
  using Rooted::Rooted;

 private:
  bool advance() override {
    const int v = vr();
    if (v == 0) {
      for (int t = 1; t < n(); ++t) Seg::put(at(me(), t), sblock(abs(t)), slen(abs(t)));
      publish(0);
      if (recv_ && own_recv() != sblock(root_)) Seg::get(own_recv(), sblock(root_), slen(root_));
      return true;
    }
    const int parent = flat() ? 0 : tree_->parent(v, n());
    if (!ready(abs(parent), 0)) return false;
    const char* mine = at(abs(parent), v - parent);
    if (!flat() && subtree(v) > 1) {
      Seg::put(at(me(), 0), mine, static_cast<size_t>(subtree(v)) * len());
      publish(0);
    }
    Seg::get(own_recv(), mine, own_len());
    return true;
  }
};


}  // namespace

std::unique_ptr<CollOp> make_gather(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                    int64_t block, int root) {
  const std::optional<Tree> tree = tree_of(a);
  if (block <= 0 || (a != Algorithm::kFlat && !tree)) return nullptr;
  const int64_t cap = ChunkedMove::cap_for(*st, tree ? st->size : 1);
  if (cap <= 0) return nullptr;
  return std::make_unique<Gather>(std::move(st), cap, send, recv, block, root, tree);
}

std::unique_ptr<CollOp> make_gatherv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                     int64_t largest, VLayout v, int root) {
  if (largest <= 0 || a != Algorithm::kFlat) return nullptr;
  const int64_t cap = ChunkedMove::cap_for(*st, 1);
  if (cap <= 0) return nullptr;
  return std::make_unique<Gather>(std::move(st), cap, send, recv, largest, std::move(v), root);
}

std::unique_ptr<CollOp> make_scatterv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                      int64_t largest, VLayout v, int root) {
  if (largest <= 0 || a != Algorithm::kFlat) return nullptr;
  const int64_t cap = ChunkedMove::cap_for(*st, st->size);
  if (cap <= 0) return nullptr;
  return std::make_unique<Scatter>(std::move(st), cap, send, recv, largest, std::move(v), root);
}

std::unique_ptr<CollOp> make_scatter(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                     int64_t block, int root) {
  const std::optional<Tree> tree = tree_of(a);
  if (block <= 0 || (a != Algorithm::kFlat && !tree)) return nullptr;
  const int64_t cap = ChunkedMove::cap_for(*st, st->size);
  if (cap <= 0) return nullptr;
  return std::make_unique<Scatter>(std::move(st), cap, send, recv, block, root, tree);
}

}  // namespace dtmpi::coll
