// The frame every algorithm shares (chunks, order between the operations of
// one communicator, the reduction helper), and Barrier / Bcast.
#include "coll/ops.hpp"

#include <algorithm>
#include <cstring>

#include "base/system_mpi.hpp"
#include "coll/trees.hpp"
#include "pack/cpu_pack.hpp"
#include "type/registry.hpp"

namespace dtmpi::coll {

namespace tp = dtmpi::transport;
using Seg = tp::NodeSegment;

CollOp::CollOp(std::shared_ptr<CommState> st, uint64_t chunks)
    : st_(std::move(st)), chunks_(chunks), seq_(st_->reserve(chunks)) {}

bool CollOp::step() {
  if (done_) return true;
  // the operations of one communicator run in the order they started: a
  // flag of a later one must never be read as this one's
  if (st_->finished + 1 != seq_) return false;
  while (chunk_ < chunks_) {
    if (!entered_) {
      if (uses_scratch() && !st_->may_write(seq_, inline_only() ? tp::kInlineSlots : tp::kScratchSlots)) return false;
      entered_ = true;
      phase_ = index_ = 0;
    }
    if (!advance()) return false;
    st_->finish(seq_);
    ++seq_;
    ++chunk_;
    entered_ = false;
  }
  complete();
  if (finally) fail(finally());
  done_ = true;
  return true;
}

Status run_blocking(CollOp& op) {
  int spins = 0;
  while (!op.step()) {
    tp::poll();  // earlier non-blocking ones of this communicator, others' work
    tp::backoff(spins);
  }
  return mpi_status(op.error, "dtmpi collective");
}

int Reducer::left(const void* l, void* acc, int64_t count) const {
  if (local) {
    local(l, acc, count);
    return MPI_SUCCESS;
  }
  return REAL(MPI_Reduce_local)(l, acc, static_cast<int>(count), type, op);
}

int Reducer::right(void* acc, const void* r, int64_t count, char* tmp) const {
  if (commutative && local) {
    local(r, acc, count);
    return MPI_SUCCESS;
  }
  if (commutative) return REAL(MPI_Reduce_local)(r, acc, static_cast<int>(count), type, op);
  const size_t bytes = static_cast<size_t>(count * elem);
  std::memcpy(tmp, r, bytes);
  const int rc = REAL(MPI_Reduce_local)(acc, tmp, static_cast<int>(count), type, op);  // tmp = acc op r
  std::memcpy(acc, tmp, bytes);
  return rc;
}

std::optional<Tree> tree_of(Algorithm a) {
  using S = Tree::Shape;
  switch (a) {
    case Algorithm::kBinomial: return Tree{S::kKnomial, 2};
    case Algorithm::kKnomial4: return Tree{S::kKnomial, 4};
    case Algorithm::kKnomial8: return Tree{S::kKnomial, 8};
    case Algorithm::kKary2: return Tree{S::kKary, 2};
    case Algorithm::kKary4: return Tree{S::kKary, 4};
    case Algorithm::kKary8: return Tree{S::kKary, 8};
    default: return std::nullopt;
  }
}

namespace {

class Barrier final : public CollOp {
 public:
  Barrier(std::shared_ptr<CommState> st, Algorithm a) : CollOp(std::move(st), 1), alg_(a) {}

 private:
  bool uses_scratch() const override { return false; }
  bool advance() override {
    if (alg_ == Algorithm::kFlat) return flat();
    if (alg_ == Algorithm::kDissemination) return dissemination();
    return tree(*tree_of(alg_));
  }

  // a parent pulls its children's arrival (their `ready` at phase 0: each
  // rank's own line, written by it alone), then announces its subtree's; the
  // root releases everyone at phase 1 (one line all read)
  bool tree(const Tree& t) {
    if (phase_ == 0) {
      for (int c; (c = t.child(me(), n(), index_)) >= 0; ++index_)
        if (!ready(c, 0)) return false;
      publish(me() == 0 ? 1 : 0);
      if (me() == 0) return true;
      phase_ = 1;
    }
    return ready(0, 1);
  }

  // round k: signal rank me+2^k, wait for rank me-2^k (the only writer of in[k])
  bool dissemination() {
    const uint64_t v = tp::flag_value(seq_, 0);
    for (; (1 << index_) < n(); ++index_, phase_ = 0) {
      if (phase_ == 0) {
        Seg::signal(seg().flags((me() + (1 << index_)) % n()).in[index_], v);
        phase_ = 1;
      }
      if (!Seg::test(seg().flags(me()).in[index_], v)) return false;
    }
    return true;
  }
  // arrivals counted at rank 0 (atomic adds), released by its ready flag
  bool flat() {
    if (me() == 0) {
      if (phase_ == 0) {
        st_->counter_expected += static_cast<uint64_t>(n() - 1);
        phase_ = 1;
      }
      if (!Seg::test(seg().flags(0).counter, st_->counter_expected)) return false;
      publish(0);
      return true;
    }
    if (phase_ == 0) {
      Seg::add(seg().flags(0).counter, 1);
      phase_ = 1;
    }
    return ready(0, 0);
  }
  Algorithm alg_;
};

// The bytes travel packed: the user's buffer itself when the type is
// contiguous, else the engine's packing (or the system MPI's MPI_Pack for a
// type the engine cannot plan) into a local buffer first.
class Bcast final : public CollOp {
 public:
  Bcast(std::shared_ptr<CommState> st, Algorithm a, char* data, int64_t bytes, int root, size_t chunk)
      : CollOp(std::move(st), static_cast<uint64_t>((bytes + static_cast<int64_t>(chunk) - 1) /
                                                    static_cast<int64_t>(chunk))),
        alg_(a), data_(data), bytes_(bytes), root_(root), chunk_bytes_(static_cast<int64_t>(chunk)) {
    region_bytes_ = chunk;
  }
  // a non-contiguous (count, type): packed here, unpacked at the end
  std::vector<char> packed;
  void* user = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  type::PlanPtr plan;

 private:
  bool inline_only() const override { return bytes_ <= static_cast<int64_t>(tp::kInlineBytes); }
  bool advance() override {
    const int64_t off = static_cast<int64_t>(chunk_) * chunk_bytes_;
    const size_t len = static_cast<size_t>(std::min(chunk_bytes_, bytes_ - off));
    if (inline_only()) return advance_inline();
    if (me() == root_) {
      Seg::put(region(me(), 0), data_ + off, len);
      publish(0);
      return true;
    }
    const int from = source();
    if (!ready(from, 0)) return false;
    if (forwards()) {  // children read this rank's copy
      Seg::put(region(me(), 0), region(from, 0), len);
      publish(0);
      Seg::get(data_ + off, region(me(), 0), len);
    } else {
      Seg::get(data_ + off, region(from, 0), len);
    }
    return true;
  }
  // a few bytes travel with the flag (one line: transport::InlineSlot)
  bool advance_inline() {
    const uint64_t v = tp::flag_value(seq_, 0);
    const size_t len = static_cast<size_t>(bytes_);
    if (me() == root_) {
      Seg::put_inline(seg().inline_slot(me(), seq_), data_, len, v);
      return true;
    }
    if (!Seg::get_inline(seg().inline_slot(source(), seq_), v, data_, len)) return false;
    if (forwards()) Seg::put_inline(seg().inline_slot(me(), seq_), data_, len, v);
    return true;
  }
  // Where a non-root reads from, and whether it keeps a copy for others. Flat:
  // the root, no. A tree (binomial, K-nomial, K-ary): its parent, where it
  // has children. Chain: relative rank vr - 1, but for the last; a rank moves
  // on to its next segment (a later scratch slot) while vr + 1 still reads
  // this one, so the segments pipeline down the chain.
  int source() const {
    const int vr = (me() - root_ + n()) % n();
    const int parent = alg_ == Algorithm::kFlat ? 0 : is_chain(alg_) ? vr - 1 : tree_->parent(vr, n());
    return (parent + root_) % n();
  }
  bool forwards() const {
    const int vr = (me() - root_ + n()) % n();
    if (is_chain(alg_)) return vr + 1 < n();
    return tree_ && tree_->child(vr, n(), 0) >= 0;
  }
  void complete() override {
    if (packed.empty() || me() == root_) return;
    if (plan) {
      pack::unpack_host(*plan, count, packed.data(), user);
      return;
    }
    int pos = 0;
    fail(REAL(MPI_Unpack)(packed.data(), static_cast<int>(packed.size()), &pos, user, count, type, comm));
  }
  Algorithm alg_;
  std::optional<Tree> tree_ = tree_of(alg_);
  char* data_;
  int64_t bytes_;
  int root_;
  int64_t chunk_bytes_;
};

}  // namespace

std::unique_ptr<CollOp> make_barrier(std::shared_ptr<CommState> st, Algorithm a) {
  // the binomial tree is the dissemination barrier's job (radix 2: no tree)
  if (a != Algorithm::kDissemination && a != Algorithm::kFlat && (a == Algorithm::kBinomial || !tree_of(a)))
    return nullptr;
  return std::make_unique<Barrier>(std::move(st), a);
}

std::unique_ptr<CollOp> make_bcast(std::shared_ptr<CommState> st, Algorithm a, void* buf, int count,
                                   MPI_Datatype type, int root, MPI_Comm comm) {
  if (a != Algorithm::kFlat && !is_chain(a) && !tree_of(a)) return nullptr;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  REAL(MPI_Type_size)(type, &size);
  REAL(MPI_Type_get_extent)(type, &lb, &extent);
  REAL(MPI_Type_get_true_extent)(type, &tlb, &textent);
  const int64_t bytes = int64_t{count} * size;
  if (bytes <= 0) return nullptr;
  const bool contiguous = tlb == 0 && textent == size && (count == 1 || extent == size);
  // the chain's segment of the scratch slot, in whole cache lines
  const size_t slot = st->seg->scratch_bytes();
  const size_t chunk = is_chain(a) ? chain_segment(slot, 64, a) : slot;
  if (contiguous) {
    return std::make_unique<Bcast>(std::move(st), a, static_cast<char*>(buf), bytes, root, chunk);
  }
  std::vector<char> packed(static_cast<size_t>(bytes));
  type::PlanPtr plan = type::plan_for(type);
  int packed_rc = MPI_SUCCESS;
  if (st->rank == root) {
    if (plan) {
      pack::pack_host(*plan, count, buf, packed.data());
    } else {
      int pos = 0;
      packed_rc = REAL(MPI_Pack)(buf, count, type, packed.data(), static_cast<int>(bytes), &pos, comm);
    }
  }
  auto op = std::make_unique<Bcast>(std::move(st), a, packed.data(), bytes, root, chunk);
  op->packed = std::move(packed);  // the vector's storage moves with it: the pointer stays valid
  op->user = buf;
  op->count = count;
  op->type = type;
  op->comm = comm;
  op->plan = std::move(plan);
  // a failed pack still runs the protocol (the peers are in it): the error is the call's
  op->error = packed_rc;
  return op;
}

}  // namespace dtmpi::coll
