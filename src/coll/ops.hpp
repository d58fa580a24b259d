// dtmpi's collective algorithms: each a non-blocking state machine
// (transport::Operation) on the engine's one progress queue; the blocking
// form starts the same machine and steps it to its end (run_blocking).
//
// A message larger than the scratch goes in chunks; each chunk is a
// collective of its own with its own sequence number (every rank cuts the
// same chunks: the byte count is the same everywhere). Within one sequence
// number a rank writes each region of its scratch slot once, then raises its
// `ready` flag to (seq, phase); readers wait for that and read the region
// where it lies (a "get": pull, so a reader's entry is implicit, and no
// rank ever writes into memory a peer may still be reading: a scratch slot is
// written again kScratchSlots sequence numbers later (an inline slot,
// kInlineSlots later), once every peer's
// `done` says it has moved on -- CommState::may_write, no handshake per
// operation).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "coll/comm_state.hpp"
#include "coll/local_reduce.hpp"
#include "coll/trees.hpp"
#include "transport/engine.hpp"

namespace dtmpi::coll {

enum class Algorithm {
  kSystem,
  kDissemination,  // barrier: log2(n) rounds of flag signals
  kFlat,           // barrier: counter at rank 0 + release flag; bcast: all read the root;
                   // reduce: the root folds every rank's input in rank order
  kBinomial,       // bcast / reduce: binomial tree (pull from the parent / fold the children)
  kRecursiveDoubling,  // allreduce (with the pairwise fold for non-powers of two)
  kReduceScatterAllgather,  // allreduce: rank i folds block i of all inputs, all read all blocks
  kTree,           // allreduce: binomial reduce to rank 0 + binomial bcast
  kRing,           // allgather: n-1 steps, each rank reads from its left neighbour
  kPairwise,       // alltoall: step k reads from rank me-k
  kLinear,         // scan / exscan: rank i waits for rank i-1's prefix
  // K-nomial trees of radix 4 and 8 (coll/trees.hpp): a parent pulls its
  // children's arrival / parts (barrier, reduce; allreduce: then every rank
  // reads the root's result). Fewer levels than the binomial tree for the
  // latency-bound sizes, at k-1 reads per level.
  kKnomial4,
  kKnomial8,
  kChain,  // bcast: relative rank vr reads vr-1's copy, segment by segment (pipelined);
           // reduce, allreduce: the same toward the chain's end (allreduce: then around the ring)
  // the chain with a segment of 4 KiB or 16 KiB instead of a quarter of the
  // slot (the segment is the chain's tuned parameter: dtmpi-tune times each)
  kChain4K,
  kChain16K,
  kBruck,   // alltoall: Bruck's exchange, ceil(log2(n)) rounds of the blocks whose index has bit k set
  kBruck4,  // alltoall: the same in radix 4 (ceil(log4(n)) levels of 3 rounds each)
  // K-ary trees of 2, 4 and 8 children (coll/trees.hpp): barrier, bcast,
  // reduce, allreduce (reduce to rank 0, then every rank reads the result),
  // gather, scatter. The same depth as the K-nomial tree of that radix where
  // n is a power of k, but a parent waits for k children, not (k-1) per
  // level below it: a flatter load at the root, a deeper tree elsewhere.
  kKary2,
  kKary4,
  kKary8,
};

// The tree of a tree algorithm: binomial (K-nomial 2), K-nomial 4 and 8,
// K-ary 2, 4 and 8; nullopt for the others.
std::optional<Tree> tree_of(Algorithm a);

// Whether `a` is one of the chain algorithms (its segment the only difference).
inline bool is_chain(Algorithm a) {
  return a == Algorithm::kChain || a == Algorithm::kChain4K || a == Algorithm::kChain16K;
}

// The segment of a chain algorithm (Bcast, Reduce, Allreduce) in a region of
// `room` bytes. kChain: a quarter of it (so that a message of a region's size
// already pipelines in four), at least 4 KiB where the region holds that;
// kChain4K / kChain16K: that many bytes where the region holds them. Rounded
// down to a multiple of `align` bytes (at least one).
// A chain variant's fixed segment in bytes (0: kChain's quarter of the region).
inline size_t chain_fixed_segment(Algorithm a) {
  return a == Algorithm::kChain4K ? 4096 : a == Algorithm::kChain16K ? 16384 : 0;
}

inline size_t chain_segment(size_t room, size_t align, Algorithm a = Algorithm::kChain) {
  const size_t fixed = chain_fixed_segment(a);
  size_t seg = 0;
  if (fixed) {
    seg = fixed < room ? fixed : room;
  } else {
    const size_t quarter = room / 4, floor = room < 4096 ? room : 4096;
    seg = quarter > floor ? quarter : floor;
  }
  seg = seg / align * align;
  return seg > 0 ? seg : align;
}

// The radix of a K-nomial or Bruck algorithm (2 for the binomial ones and bruck).
inline int radix_of(Algorithm a) {
  return a == Algorithm::kKnomial4 || a == Algorithm::kBruck4 ? 4 : a == Algorithm::kKnomial8 ? 8 : 2;
}

class CollOp : public transport::Operation {
 public:
  CollOp(std::shared_ptr<CommState> st, uint64_t chunks);
  // Runs the chunks in order; a composite operation (coll_move_v.cpp) runs
  // inner operations instead.
  bool step() override;
  uint64_t chunks() const { return chunks_; }
  // Local buffers the operation reads or writes (packed sides), and what
  // runs after complete() (unpacking them into the user's layout).
  std::vector<std::vector<char>> keep;
  std::function<int()> finally;

 protected:
  // Advances chunk `chunk_` (sequence number `seq_`) as far as it can without
  // waiting; true once this rank is done with it. phase_ / index_ are reset
  // for each chunk.
  virtual bool advance() = 0;
  // After the last chunk (unpacking).
  virtual void complete() {}
  virtual bool uses_scratch() const { return true; }
  // The chunk's bytes travel in the inline lines only (no scratch slot):
  // their deeper ring lets it run further ahead of the peers.
  virtual bool inline_only() const { return false; }

  void fail(int code) {
    if (error == MPI_SUCCESS) error = code;
  }
  transport::NodeSegment& seg() const { return *st_->seg; }
  int me() const { return st_->rank; }
  int n() const { return st_->size; }
  char* region(int r, int k) const { return seg().scratch(r, seq_) + k * region_bytes_; }
  bool ready(int r, unsigned phase) const {
    return transport::NodeSegment::test(seg().flags(r).ready, transport::flag_value(seq_, phase));
  }
  void publish(unsigned phase) const {
    transport::NodeSegment::signal(seg().flags(me()).ready, transport::flag_value(seq_, phase));
  }

  std::shared_ptr<CommState> st_;
  uint64_t chunks_, chunk_ = 0, seq_;
  size_t region_bytes_ = 0;
  int phase_ = 0, index_ = 0;

 private:
  bool entered_ = false, done_ = false;
};

// The element-wise combination of a reduction: dtmpi's own kernel for the
// common predefined (op, type) pairs (coll/local_reduce.hpp), else the system
// MPI's MPI_Reduce_local (every predefined op, user ops). MPI's order rules:
// the left operand is the lower ranks' part.
struct Reducer {
  MPI_Datatype type;
  MPI_Op op;
  bool commutative;
  int64_t elem;  // bytes of one element
  LocalReduceFn local = nullptr;
  // acc = left op acc
  int left(const void* left, void* acc, int64_t count) const;
  // acc = acc op right (through `tmp` unless commutative)
  int right(void* acc, const void* right, int64_t count, char* tmp) const;
};

// Builds an operation; null where the algorithm cannot serve the call.
std::unique_ptr<CollOp> make_barrier(std::shared_ptr<CommState> st, Algorithm a);
std::unique_ptr<CollOp> make_bcast(std::shared_ptr<CommState> st, Algorithm a, void* buf, int count,
                                   MPI_Datatype type, int root, MPI_Comm comm);
std::unique_ptr<CollOp> make_allreduce(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out,
                                       int count, const Reducer& r);
std::unique_ptr<CollOp> make_reduce(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out, int count,
                                    const Reducer& r, int root);

// The data-moving collectives: `send` / `recv` are contiguous bytes (the
// caller packs a non-contiguous side: coll_move.cpp), `block` bytes per rank;
// `send` may equal the recv block it stands for (MPI_IN_PLACE). Null where the
// algorithm cannot serve the call (the same answer on every rank).
std::unique_ptr<CollOp> make_allgather(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                       int64_t block);
std::unique_ptr<CollOp> make_alltoall(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                      int64_t block);
// gather: `recv` only at the root; scatter: `send` only at the root
std::unique_ptr<CollOp> make_gather(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                    int64_t block, int root);
std::unique_ptr<CollOp> make_scatter(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                     int64_t block, int root);
// The v forms: each rank's block its own size (coll/move.hpp's VLayout on
// this rank), `largest` the largest block anywhere (the same on every rank).
// Allgatherv: flat, ring, recursive doubling / Bruck; Alltoallv: pairwise,
// flat; Gatherv, Scatterv: flat.
struct VLayout;
std::unique_ptr<CollOp> make_allgatherv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                        VLayout v);
std::unique_ptr<CollOp> make_alltoallv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                       int64_t largest, VLayout v);
std::unique_ptr<CollOp> make_gatherv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                     int64_t largest, VLayout v, int root);
std::unique_ptr<CollOp> make_scatterv(std::shared_ptr<CommState> st, Algorithm a, const char* send, char* recv,
                                      int64_t largest, VLayout v, int root);
// Reduce_scatter_block (`count` elements per block), Scan and Exscan.
std::unique_ptr<CollOp> make_reduce_scatter_block(std::shared_ptr<CommState> st, Algorithm a, const void* in,
                                                  void* out, int count, const Reducer& r);
// Reduce_scatter: rank j's result is counts[j] elements (every rank's counts).
std::unique_ptr<CollOp> make_reduce_scatter(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out,
                                            std::vector<int64_t> counts, const Reducer& r);
std::unique_ptr<CollOp> make_scan(std::shared_ptr<CommState> st, Algorithm a, const void* in, void* out, int count,
                                  const Reducer& r, bool exclusive);

// Binomial tree helpers over relative ranks (root 0): the lowest set bit
// (n for 0, the root's "infinite" one), the parent, and child k = vr + 2^k.
inline int lowbit(int vr, int n) { return vr == 0 ? n : vr & -vr; }
inline int parent_of(int vr) { return vr - (vr & -vr); }
inline bool has_children(int vr, int n) { return lowbit(vr, n) > 1 && vr + 1 < n; }

// Blocking: steps `op` (and the engine's other work) to its end.
Status run_blocking(CollOp& op);

}  // namespace dtmpi::coll
