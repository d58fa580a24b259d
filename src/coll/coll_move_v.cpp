// The entries of the v forms: Allgatherv, Gatherv, Scatterv, Alltoallv, Alltoallw (any
// datatype; a side whose elements do not lie back to back is packed block by
// block: coll/sides.hpp). Whether dtmpi serves, the algorithm and the chunks
// depend on the largest block, which must be the same on every rank:
// Allgatherv's receive counts are everyone's, so each rank computes it; for
// the others a rank knows only its own blocks (a gather's non-root its send
// count), so the calls agree on it first, through one 8-byte allreduce of
// dtmpi's -- only where DTMPI_COLL lets it pay (coll::agrees_first and
// agrees_first_nonblocking: the same answer on every rank; with a tuned
// table, never where an agreement before the system MPI's call would cost
// more than 2%). A blocking call agrees on its lane and then chooses; a
// non-blocking one is one operation of its lane (AgreedV below): the
// agreement, then dtmpi's algorithm for the data.
#include <algorithm>
#include <cstring>
#include <functional>

#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "coll/entry.hpp"
#include "coll/hierarchy.hpp"
#include "coll/sides.hpp"
#include "runtime/stats.hpp"
#include "transport/engine.hpp"

namespace dtmpi::coll {

using namespace detail;

namespace {


int64_t largest_of(int n, const int* counts, MPI_Datatype t) {
  int64_t most = 0;
  for (int j = 0; j < n; ++j) most = std::max(most, bytes_of(counts[j], t));
  return most;
}

bool sequence_room(const CommState& st);

// The lane's state where dtmpi may serve `kind` (before the sizes are
// known), else null: the blocking lane, or the non-blocking one for a call
// with a request, where the chunks of the largest block fit a slot (`regions`
// pieces each: the same answer on every rank).
Result<std::shared_ptr<CommState>> may_agree(CollOpKind kind, MPI_Comm comm, MPI_Request* req, int regions) {
  const int n = size_of(comm);
  if (req ? !agrees_first_nonblocking(kind, n) : !agrees_first(kind, n)) return std::shared_ptr<CommState>();
  auto st = usable(comm, !req);
  if (!st || !st.value() || !req) return st;
  if (ChunkedMove::cap_for(*st.value(), regions == 0 ? n : regions) <= 0) return std::shared_ptr<CommState>();
  if (!sequence_room(*st.value())) return std::shared_ptr<CommState>();
  return st;
}

// A non-blocking Gatherv, Scatterv or Alltoallv as one operation of the
// non-blocking lane: an 8-byte allreduce agrees on the largest block, then
// dtmpi's algorithm for it moves the data (the system MPI cannot take the
// call over any more: the other ranks may have started its collectives on
// this communicator meanwhile, in another order). The data's chunks depend on
// the agreement, but every call of the lane must take the same sequence
// numbers on every rank when it starts: so the call reserves a range of
// kBudget numbers then, the data's operation takes the first ones, and the
// rest are finished at once on every rank alike (no scratch, no flag, no wait
// between them).
class AgreedV final : public CollOp {
 public:
  using Build = std::function<std::unique_ptr<CollOp>(std::shared_ptr<CommState>, int64_t largest)>;
  // 2^24 numbers: a block of 2^24 chunks of at least 64 bytes (1 GiB; 64 GiB
  // with the default scratch on 64 ranks). Flags hold 56 bits of sequence:
  // may_agree stops serving these calls (the system MPI's, decided alike on
  // every rank) before the lane's numbers come near that (2^31 calls).
  static constexpr uint64_t kBudget = uint64_t{1} << 24;
  static constexpr uint64_t kSequenceLimit = uint64_t{1} << 55;

  // Null where no agreement can be built (the same answer on every rank).
  static std::unique_ptr<AgreedV> make(std::shared_ptr<CommState> st, int64_t mine, Build build) {
    Reducer r{};
    if (!reducer_for(MPI_INT64_T, MPI_MAX, r)) return nullptr;
    auto op = std::unique_ptr<AgreedV>(new AgreedV(st, mine, std::move(build)));
    Algorithm a = select(CollOpKind::kAllreduce, st->size, 8, true);
    if (a == Algorithm::kSystem) a = Algorithm::kRecursiveDoubling;
    op->agree_ = make_allreduce(st, a, &op->mine_, &op->largest_, 1, r);
    if (!op->agree_) return nullptr;
    op->first_ = st->reserve(kBudget);
    return op;
  }

  // Whether the lane's numbers leave room for another call (the same on every rank).
  static bool room_for_another(const CommState& st) { return st.next_seq < kSequenceLimit - 2 * kBudget; }

  bool step() override {
    if (done_) return true;
    if (agree_) {
      if (!agree_->step()) return false;
      if (agree_->error != MPI_SUCCESS) fail(agree_->error);
      agree_.reset();
      // built on every rank alike whatever this rank's own error (a failed
      // pack still runs the protocol: the peers are in it), the error kept
      if (largest_ > 0) {
        const ReservedRange range(*st_, first_);
        data_ = build_(st_, largest_);
        // neither happens where the entries checked the slot and chose an
        // algorithm the operation has; the same on every rank if it did:
        // nothing moved, every rank told
        if (!data_ || data_->chunks() > kBudget) {
          fail(MPI_ERR_INTERN);
          data_.reset();
        }
      }
    }
    if (data_) {
      if (!data_->step()) return false;
      if (data_->error != MPI_SUCCESS) fail(data_->error);
      data_.reset();
    }
    st_->finish(first_ + kBudget - 1);
    if (finally) fail(finally());
    done_ = true;
    return true;
  }

 private:
  AgreedV(std::shared_ptr<CommState> st, int64_t mine, Build build)
      : CollOp(std::move(st), 0), mine_(mine), build_(std::move(build)) {}
  bool advance() override { return true; }  // no chunks of its own: step() runs the inner operations
  int64_t mine_ = 0, largest_ = 0;
  Build build_;
  std::unique_ptr<CollOp> agree_, data_;
  uint64_t first_ = 0;
  bool done_ = false;
};

bool sequence_room(const CommState& st) { return AgreedV::room_for_another(st); }

// The largest of every rank's `mine` (collective over the state's ranks).
Result<int64_t> agree_largest(const std::shared_ptr<CommState>& st, int64_t mine) {
  Reducer r{};
  if (!reducer_for(MPI_INT64_T, MPI_MAX, r)) return Error{MPI_ERR_INTERN, "no reducer for MPI_INT64_T"};
  int64_t largest = 0;
  // the 8-byte allreduce DTMPI_COLL picks (recursive doubling where that is
  // the system MPI's: this agreement is dtmpi's, on dtmpi's lane)
  Algorithm a = select(CollOpKind::kAllreduce, st->size, 8);
  if (a == Algorithm::kSystem) a = Algorithm::kRecursiveDoubling;
  auto op = make_allreduce(st, a, &mine, &largest, 1, r);
  if (!op) return Error{MPI_ERR_INTERN, "no allreduce for the agreement"};
  DTMPI_TRY(run_blocking(*op));
  if (op->error != MPI_SUCCESS) return Error{op->error, "agreeing on the largest block"};
  return largest;
}

// The algorithm for `kind` with blocks up to `largest` bytes (kSystem: the
// system MPI's).
Algorithm choose(CollOpKind kind, const CommState& st, int64_t largest) {
  return largest > 0 ? choice(kind, st.size, largest) : Algorithm::kSystem;
}

// A served v collective's data: its two sides (packed where needed) and
// what the operation reads and writes.
template <class SendSide, class RecvSide>
struct VParts {
  SendSide send;
  RecvSide recv;
  const char* from = nullptr;
  char* to = nullptr;
  VLayout v;
};

// Gatherv, Scatterv and Alltoallv: served after an agreement on the largest
// block. The blocking form agrees, chooses, and only then builds its parts
// (nothing is packed for a call the system MPI takes); the non-blocking form
// builds them and agrees inside its lane (AgreedV), choosing once the
// agreement is in. build(pack_rc) makes the parts; make(state, algorithm,
// from, to, largest, layout) the operation.
template <class Build, class Make>
Result<bool> agreed_v(CollOpKind kind, std::shared_ptr<CommState> st, int64_t mine, MPI_Comm comm, MPI_Request* req,
                      Build build, Make make) {
  int pack_rc = MPI_SUCCESS;
  if (req) {
    auto parts = build(pack_rc);
    auto op = AgreedV::make(std::move(st), mine,
                            [kind, make, from = parts.from, to = parts.to, v = std::move(parts.v)](
                                std::shared_ptr<CommState> s, int64_t largest) mutable {
                              const Algorithm a = nonblocking_after_agreement(kind, s->size, largest);
                              return make(std::move(s), a, from, to, largest, std::move(v));
                            });
    if (!op) return false;
    return launch(std::move(op), std::move(parts.send), std::move(parts.recv), pack_rc, comm, req);
  }
  auto largest = agree_largest(st, mine);
  if (!largest) return largest.error();
  const Algorithm a = choose(kind, *st, largest.value());
  if (a == Algorithm::kSystem) return false;
  auto parts = build(pack_rc);
  auto op = make(std::move(st), a, parts.from, parts.to, largest.value(), std::move(parts.v));
  return launch(std::move(op), std::move(parts.send), std::move(parts.recv), pack_rc, comm, req);
}

}  // namespace

Result<bool> allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                        MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || (!in_place && st == MPI_DATATYPE_NULL) || !rc || !rd) return false;
  const int n = size_of(comm);
  Algorithm a{};
  auto state = serving(CollOpKind::kAllgatherv, comm, largest_of(n, rc, rt), req, a, in_place);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int me = state.value()->rank;
  int pack_rc = MPI_SUCCESS;
  VSide recv = vside(rb, n, rc, rd, rt, in_place, comm, pack_rc);
  Side send = in_place ? Side{} : side(sb, sc, st, true, comm, pack_rc);
  const char* mine = in_place ? recv.data + recv.blocks.offset[me] : send.data;
  VLayout v;
  v.recvs = recv.blocks;
  auto op = make_allgatherv(std::move(state.value()), a, mine, recv.data, std::move(v));
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

Result<bool> gatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                     MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, MPI_BYTE, root)) return false;
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  const bool is_root = me == root, in_place = is_root && sb == MPI_IN_PLACE;
  if ((is_root && (rt == MPI_DATATYPE_NULL || !rc || !rd)) || (!in_place && st == MPI_DATATYPE_NULL)) return false;
  auto state = may_agree(CollOpKind::kGatherv, comm, req, 1);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  const int64_t own = in_place ? 0 : bytes_of(sc, st);
  return agreed_v(
      CollOpKind::kGatherv, std::move(state.value()), is_root ? std::max(own, largest_of(n, rc, rt)) : own, comm, req,
      [&](int& pack_rc) {
        VParts<Side, VSide> p;
        p.recv = is_root ? vside(rb, n, rc, rd, rt, in_place, comm, pack_rc) : VSide{};
        p.send = in_place ? Side{} : side(sb, sc, st, true, comm, pack_rc);
        p.from = in_place ? p.recv.data + p.recv.blocks.offset[root] : p.send.data;
        p.to = p.recv.data;
        p.v.recvs = p.recv.blocks;
        p.v.own = own;
        return p;
      },
      [root](std::shared_ptr<CommState> s, Algorithm a, const char* from, char* to, int64_t largest, VLayout v) {
        return make_gatherv(std::move(s), a, from, to, largest, std::move(v), root);
      });
}

Result<bool> scatterv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, int rc,
                      MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, MPI_BYTE, root)) return false;
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  const bool is_root = me == root, in_place = is_root && rb == MPI_IN_PLACE;
  if ((is_root && (st == MPI_DATATYPE_NULL || !sc || !sd)) || (!in_place && rt == MPI_DATATYPE_NULL)) return false;
  auto state = may_agree(CollOpKind::kScatterv, comm, req, 0);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  const int64_t own = in_place ? 0 : bytes_of(rc, rt);
  return agreed_v(
      CollOpKind::kScatterv, std::move(state.value()), is_root ? std::max(own, largest_of(n, sc, st)) : own, comm, req,
      [&](int& pack_rc) {
        VParts<VSide, Side> p;
        p.send = is_root ? vside(sb, n, sc, sd, st, true, comm, pack_rc) : VSide{};
        p.recv = in_place ? Side{} : side(rb, rc, rt, false, comm, pack_rc);
        p.from = p.send.data;
        p.to = p.recv.data;
        p.v.sends = p.send.blocks;
        p.v.own = own;
        return p;
      },
      [root](std::shared_ptr<CommState> s, Algorithm a, const char* from, char* to, int64_t largest, VLayout v) {
        return make_scatterv(std::move(s), a, from, to, largest, std::move(v), root);
      });
}

namespace {

// Alltoallv and Alltoallw once agreed: `side(buf, send, read, pack_rc)` lays
// out the send or receive side's n blocks (vside or wside); in place, the
// receive side is both.
template <class Side>
Result<bool> agreed_alltoall(std::shared_ptr<CommState> st, int64_t mine, const void* sb, void* rb, bool in_place,
                             MPI_Comm comm, MPI_Request* req, Side side) {
  return agreed_v(
      CollOpKind::kAlltoallv, std::move(st), mine, comm, req,
      [&](int& pack_rc) {
        VParts<VSide, VSide> p;
        p.recv = side(rb, false, in_place, pack_rc);
        p.send = in_place ? VSide{} : side(sb, true, true, pack_rc);
        p.from = in_place ? p.recv.data : p.send.data;
        p.to = p.recv.data;
        p.v.recvs = p.recv.blocks;
        p.v.sends = in_place ? p.recv.blocks : p.send.blocks;
        return p;
      },
      [](std::shared_ptr<CommState> s, Algorithm a, const char* from, char* to, int64_t largest, VLayout v) {
        return make_alltoallv(std::move(s), a, from, to, largest, std::move(v));
      });
}

// A blocking Alltoallv or Alltoallw on a communicator spanning nodes:
// node-aggregated (coll/hierarchy.hpp) where DTMPI_COLL names an Alltoallv
// algorithm for the largest block -- which, with the largest rank's bytes,
// one allreduce over the communicator agrees on first (only where DTMPI_COLL
// may choose dtmpi's at all); false elsewhere, the same on every rank.
// `side(buf, send, read, pack_rc)` as for agreed_alltoall.
template <class Side>
Result<bool> aggregated_alltoallv(MPI_Comm comm, int64_t largest_block, int64_t rank_bytes, const void* sb, void* rb,
                                  bool in_place, Side side) {
  const int n = size_of(comm);
  if (!agrees_first(CollOpKind::kAlltoallv, n)) return false;
  auto state = usable_or_hierarchy(comm, true);
  if (!state) return state.error();
  if (!state.value() || state.value()->seg || !state.value()->hier) return false;
  int64_t agreed[2] = {largest_block, rank_bytes};
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(MPI_IN_PLACE, agreed, 2, MPI_INT64_T, MPI_MAX, comm));
  if (agreed[0] <= 0 || choice(CollOpKind::kAlltoallv, n, agreed[0]) == Algorithm::kSystem) return false;
  if (!aggregated_v_fits(*state.value()->hier, agreed[1])) return false;  // before anything is packed
  int pack_rc = MPI_SUCCESS;
  VSide recv = side(rb, false, in_place, pack_rc);
  VSide send = in_place ? VSide{} : side(sb, true, true, pack_rc);
  auto served = hier_alltoallv(*state.value()->hier, in_place ? recv.data : send.data,
                               in_place ? recv.blocks : send.blocks, recv.data, recv.blocks);
  if (!served || !served.value()) return served;
  runtime::count(runtime::Counter::kTunedCollectives);
  if (pack_rc != MPI_SUCCESS) return Error{pack_rc, "packing an Alltoallv's send side failed"};
  if (recv.is_packed) {
    const int unpacked = unpacker(recv, comm)();
    if (unpacked != MPI_SUCCESS) return Error{unpacked, "unpacking an Alltoallv's receive side failed"};
  }
  return true;
}

// The bytes of a v side: counts[j] elements of `t` (or of types[j]).
int64_t side_bytes(int n, const int* counts, MPI_Datatype t) {
  int64_t sum = 0;
  for (int j = 0; j < n; ++j) sum += bytes_of(counts[j], t);
  return sum;
}
int64_t side_bytes(int n, const int* counts, const MPI_Datatype* types) {
  int64_t sum = 0;
  for (int j = 0; j < n; ++j) sum += block_bytes(counts[j], types[j]);
  return sum;
}

// Alltoallv's and Alltoallw's one path once their sizes are known (`mine`:
// this rank's largest block, `all`: its larger side): node-aggregated where
// the communicator spans nodes (blocking), else agreed on one node.
template <class Side>
Result<bool> serve_alltoall(MPI_Comm comm, MPI_Request* req, int64_t mine, int64_t all, const void* sb, void* rb,
                            bool in_place, Side lay_out) {
  if (!req) {
    auto aggregated = aggregated_alltoallv(comm, mine, all, sb, rb, in_place, lay_out);
    if (!aggregated || aggregated.value()) return aggregated;
  }
  auto state = may_agree(CollOpKind::kAlltoallv, comm, req, 0);
  if (!state) return state.error();
  if (!state.value()) return false;
  return agreed_alltoall(std::move(state.value()), mine, sb, rb, in_place, comm, req, lay_out);
}

}  // namespace

Result<bool> alltoallv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, const int* rc,
                       const int* rd, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || !rc || !rd || (!in_place && (st == MPI_DATATYPE_NULL || !sc || !sd))) return false;
  const int n = size_of(comm);
  auto lay_out = [&](const void* buf, bool send, bool read, int& pack_rc) {
    return send ? vside(buf, n, sc, sd, st, read, comm, pack_rc) : vside(buf, n, rc, rd, rt, read, comm, pack_rc);
  };
  // what this rank sends to or receives from any one peer, and in all
  int64_t mine = largest_of(n, rc, rt), all = side_bytes(n, rc, rt);
  if (!in_place) {
    mine = std::max(mine, largest_of(n, sc, st));
    all = std::max(all, side_bytes(n, sc, st));
  }
  return serve_alltoall(comm, req, mine, all, sb, rb, in_place, lay_out);
}

// Alltoallw: Alltoallv's algorithms once each block is bytes (a block of
// another type per peer, packed where its elements do not lie back to back;
// displacements in bytes), chosen as Alltoallv's for the largest block.
Result<bool> alltoallw(const void* sb, const int* sc, const int* sd, const MPI_Datatype* st, void* rb, const int* rc,
                       const int* rd, const MPI_Datatype* rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  const int n = size_of(comm);
  if (n == 1 && rc && rd && rt && (in_place || (sc && sd && st)) && (rc[0] <= 0 || rt[0] != MPI_DATATYPE_NULL) &&
      (in_place || sc[0] <= 0 || st[0] != MPI_DATATYPE_NULL)) {
    int inter = 0;
    REAL(MPI_Comm_test_inter)(comm, &inter);
    if (!inter) {
      auto served = alltoallw_self(sb, sc, sd, st, rb, rc, rd, rt, comm, req);
      if (!served || served.value()) return served;
    }
  }
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (n <= 0 || !rc || !rd || !rt || (!in_place && (!sc || !sd || !st))) return false;
  // a block of elements needs a type (the system MPI reports the error)
  for (int j = 0; j < n; ++j)
    if ((rc[j] > 0 && rt[j] == MPI_DATATYPE_NULL) || (!in_place && sc[j] > 0 && st[j] == MPI_DATATYPE_NULL))
      return false;
  auto lay_out = [&](const void* buf, bool send, bool read, int& pack_rc) {
    return send ? wside(buf, n, sc, sd, st, read, comm, pack_rc) : wside(buf, n, rc, rd, rt, read, comm, pack_rc);
  };
  int64_t mine = 0, all = side_bytes(n, rc, rt);
  for (int j = 0; j < n; ++j) {
    mine = std::max(mine, block_bytes(rc[j], rt[j]));
    if (!in_place) mine = std::max(mine, block_bytes(sc[j], st[j]));
  }
  if (!in_place) all = std::max(all, side_bytes(n, sc, st));
  return serve_alltoall(comm, req, mine, all, sb, rb, in_place, lay_out);
}

namespace detail {

Result<bool> run_forced_v(CollOpKind op, Algorithm a, std::shared_ptr<CommState> st, const void* sb, void* rb,
                          int count, MPI_Datatype type, int root, MPI_Request* req) {
  if (!contiguous(count, type)) return false;
  const int64_t block = bytes_of(count, type);
  // every rank's block `block` bytes, in rank order (the uniform call as a v form)
  Blocks all;
  for (int j = 0; j < st->size; ++j) {
    all.bytes.push_back(block);
    all.offset.push_back(j * block);
  }
  VLayout v;
  v.own = block;
  const bool is_root = st->rank == root;
  char* r = static_cast<char*>(rb);
  // MPI_IN_PLACE (Allgatherv, Alltoallv): the own block of the receive side, or all of it
  const char* s = sb != MPI_IN_PLACE ? static_cast<const char*>(sb)
                  : op == CollOpKind::kAllgatherv ? r + st->rank * block
                                                  : r;
  switch (op) {
    case CollOpKind::kAllgatherv: v.recvs = all; break;
    case CollOpKind::kGatherv: if (is_root) v.recvs = all; break;
    case CollOpKind::kScatterv: if (is_root) v.sends = all; break;
    case CollOpKind::kAlltoallv: v.recvs = v.sends = all; break;
    default: return false;
  }
  auto data = [=](std::shared_ptr<CommState> state, int64_t largest) mutable -> std::unique_ptr<CollOp> {
    switch (op) {
      case CollOpKind::kAllgatherv: return make_allgatherv(std::move(state), a, s, r, std::move(v));
      case CollOpKind::kGatherv:
        return make_gatherv(std::move(state), a, s, is_root ? r : nullptr, largest, std::move(v), root);
      case CollOpKind::kScatterv:
        return make_scatterv(std::move(state), a, is_root ? s : nullptr, r, largest, std::move(v), root);
      default: return make_alltoallv(std::move(state), a, s, r, largest, std::move(v));
    }
  };
  // what the entries pay: Gatherv, Scatterv and Alltoallv agree on the
  // largest block first (a non-blocking call inside its own operation)
  if (op == CollOpKind::kAllgatherv) return start(data(std::move(st), block), req);
  if (req) {
    auto agreed = AgreedV::make(st, block, data);
    if (!agreed) return false;
    return start(std::move(agreed), req);
  }
  auto largest = agree_largest(st, block);
  if (!largest) return largest.error();
  return start(data(std::move(st), block), req);
}

}  // namespace detail

}  // namespace dtmpi::coll
