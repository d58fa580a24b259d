// The frame of the reductions (reduce_ops.cpp, scan_ops.cpp): a chunk is
// `cap` whole elements of every region, each region rounded up to 64 bytes.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/ops.hpp"
#include "coll/trees.hpp"

namespace dtmpi::coll {

// Operations whose chunk count depends on the scratch: built in two steps.
template <class Op, class... Args>
std::unique_ptr<CollOp> build(std::shared_ptr<CommState> st, int regions, int count, const Reducer& r,
                              Args&&... args) {
  // room for the 64-byte rounding of each region; an element that does not
  // fit leaves the call to the system MPI (the same answer on every rank)
  const int64_t room = static_cast<int64_t>(st->seg->scratch_bytes() / static_cast<size_t>(regions)) - 64;
  if (r.elem <= 0 || r.elem > room) return nullptr;
  const int64_t cap = room / r.elem;
  const uint64_t chunks = static_cast<uint64_t>((count + cap - 1) / cap);
  return std::make_unique<Op>(std::move(st), chunks, cap, regions, count, r, std::forward<Args>(args)...);
}

class ChunkedReduction : public CollOp {
 public:
  ChunkedReduction(std::shared_ptr<CommState> st, uint64_t chunks, int64_t cap, int regions, int count,
                   const Reducer& r, const void* in, void* out)
      : CollOp(std::move(st), chunks), in_(static_cast<const char*>(in)), out_(static_cast<char*>(out)),
        count_(count), r_(r), cap_(cap) {
    region_bytes_ = (static_cast<size_t>(cap_ * r_.elem) + 63) / 64 * 64;
    (void)regions;
  }

 protected:
  int64_t first() const { return static_cast<int64_t>(chunk_) * cap_; }
  int64_t m() const { return std::min<int64_t>(cap_, count_ - first()); }
  size_t bytes() const { return static_cast<size_t>(m() * r_.elem); }
  const char* in() const { return in_ + first() * r_.elem; }
  char* out() const { return out_ ? out_ + first() * r_.elem : nullptr; }
  // The lane's work buffers (CommState::acc, tmp), sized here, while this
  // operation runs, and only ever grown: never in the constructor, where an
  // earlier operation of the lane may still hold a partial result in them (a
  // smaller cap shrank `acc` under it and the regrowth zeroed its tail: an
  // MPI_Ireduce lost a rank's part when an MPI_Iallreduce of another
  // algorithm started meanwhile, CI 2026-11-27).
  char* acc_buf() { return work(st_->acc); }
  char* tmp() { return work(st_->tmp); }
  void check(int rc) {
    if (rc != MPI_SUCCESS) fail(rc);
  }
  // the children of relative rank vr in the radix-k tree rooted at
  // `tree_root`, from index_ on, ascending (their ranges follow vr's own):
  // acc = acc op child's part (region 0)
  bool fold_children(int vr, int tree_root, char* acc, unsigned phase, const Tree& tree = Tree{}) {
    for (int c; (c = tree.child(vr, n(), index_)) >= 0; ++index_) {
      const int child = (c + tree_root) % n();
      if (!ready(child, phase)) return false;
      check(r_.right(acc, region(child, 0), m(), tmp()));
    }
    return true;
  }

  char* work(std::vector<char>& v) const {
    const auto need = static_cast<size_t>(cap_ * r_.elem);
    if (v.size() < need) v.resize(need);
    return v.data();
  }

  const char* in_;
  char* out_;
  int64_t count_;
  Reducer r_;
  int64_t cap_;
};

}  // namespace dtmpi::coll
