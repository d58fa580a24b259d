// The entries of the v forms: Allgatherv, Gatherv, Scatterv, Alltoallv (any
// datatype; a side whose elements do not lie back to back is packed block by
// block: coll/sides.hpp). Whether dtmpi serves, the algorithm and the chunks
// depend on the largest block, which must be the same on every rank:
// Allgatherv's receive counts are everyone's, so each rank computes it; for
// the others a rank knows only its own blocks (a gather's non-root its send
// count), so the blocking calls agree on it first, through one 8-byte
// allreduce of dtmpi's on the communicator's blocking lane -- only where
// DTMPI_COLL lets it pay (coll::agrees_first: the same answer on every rank;
// with a tuned table, never where an agreement before the system MPI's call
// would cost more than 2%). Their non-blocking
// forms, which cannot wait for an agreement, stay the system MPI's.
#include <algorithm>

#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "coll/entry.hpp"
#include "coll/sides.hpp"

namespace dtmpi::coll {

using namespace detail;

namespace {


int64_t largest_of(int n, const int* counts, MPI_Datatype t) {
  int64_t most = 0;
  for (int j = 0; j < n; ++j) most = std::max(most, bytes_of(counts[j], t));
  return most;
}

// The blocking lane's state where dtmpi may serve `kind` (before the sizes
// are known), else null; non-blocking calls: null.
Result<std::shared_ptr<CommState>> may_agree(CollOpKind kind, MPI_Comm comm, MPI_Request* req) {
  if (req || !agrees_first(kind, size_of(comm))) return std::shared_ptr<CommState>();
  return usable(comm, true);
}

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

}  // namespace

Result<bool> allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                        MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || (!in_place && st == MPI_DATATYPE_NULL) || !rc || !rd) return false;
  const int n = size_of(comm);
  Algorithm a{};
  auto state = serving(CollOpKind::kAllgatherv, comm, largest_of(n, rc, rt), req, a);
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
  auto state = may_agree(CollOpKind::kGatherv, comm, req);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  const int64_t own = in_place ? 0 : bytes_of(sc, st);
  auto largest = agree_largest(state.value(), is_root ? std::max(own, largest_of(n, rc, rt)) : own);
  if (!largest) return largest.error();
  const Algorithm a = choose(CollOpKind::kGatherv, *state.value(), largest.value());
  if (a == Algorithm::kSystem) return false;
  int pack_rc = MPI_SUCCESS;
  VSide recv = is_root ? vside(rb, n, rc, rd, rt, in_place, comm, pack_rc) : VSide{};
  Side send = in_place ? Side{} : side(sb, sc, st, true, comm, pack_rc);
  const char* mine = in_place ? recv.data + recv.blocks.offset[root] : send.data;
  VLayout v;
  v.recvs = recv.blocks;
  v.own = own;
  auto op = make_gatherv(std::move(state.value()), a, mine, recv.data, largest.value(), std::move(v), root);
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

Result<bool> scatterv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, int rc,
                      MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, MPI_BYTE, root)) return false;
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  const bool is_root = me == root, in_place = is_root && rb == MPI_IN_PLACE;
  if ((is_root && (st == MPI_DATATYPE_NULL || !sc || !sd)) || (!in_place && rt == MPI_DATATYPE_NULL)) return false;
  auto state = may_agree(CollOpKind::kScatterv, comm, req);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  const int64_t own = in_place ? 0 : bytes_of(rc, rt);
  auto largest = agree_largest(state.value(), is_root ? std::max(own, largest_of(n, sc, st)) : own);
  if (!largest) return largest.error();
  const Algorithm a = choose(CollOpKind::kScatterv, *state.value(), largest.value());
  if (a == Algorithm::kSystem) return false;
  int pack_rc = MPI_SUCCESS;
  VSide send = is_root ? vside(sb, n, sc, sd, st, true, comm, pack_rc) : VSide{};
  Side recv = in_place ? Side{} : side(rb, rc, rt, false, comm, pack_rc);
  VLayout v;
  v.sends = send.blocks;
  v.own = own;
  auto op = make_scatterv(std::move(state.value()), a, send.data, recv.data, largest.value(), std::move(v), root);
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

Result<bool> alltoallv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, const int* rc,
                       const int* rd, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || !rc || !rd || (!in_place && (st == MPI_DATATYPE_NULL || !sc || !sd))) return false;
  auto state = may_agree(CollOpKind::kAlltoallv, comm, req);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  // what this rank sends to or receives from any one peer
  int64_t mine = largest_of(n, rc, rt);
  if (!in_place) mine = std::max(mine, largest_of(n, sc, st));
  auto largest = agree_largest(state.value(), mine);
  if (!largest) return largest.error();
  const Algorithm a = choose(CollOpKind::kAlltoallv, *state.value(), largest.value());
  if (a == Algorithm::kSystem) return false;
  int pack_rc = MPI_SUCCESS;
  VSide recv = vside(rb, n, rc, rd, rt, in_place, comm, pack_rc);
  VSide send = in_place ? VSide{} : vside(sb, n, sc, sd, st, true, comm, pack_rc);
  VLayout v;
  v.recvs = recv.blocks;
  v.sends = in_place ? recv.blocks : send.blocks;
  auto op = make_alltoallv(std::move(state.value()), a, in_place ? recv.data : send.data, recv.data,
                           largest.value(), std::move(v));
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
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
  // what the entries pay: the blocking Gatherv, Scatterv and Alltoallv agree
  // on the largest block first (the non-blocking ones are never dtmpi's)
  if (op != CollOpKind::kAllgatherv) {
    if (req) return false;
    auto largest = agree_largest(st, block);
    if (!largest) return largest.error();
  }
  VLayout v;
  v.own = block;
  const bool is_root = st->rank == root;
  const char* s = static_cast<const char*>(sb);
  char* r = static_cast<char*>(rb);
  switch (op) {
    case CollOpKind::kAllgatherv:
      v.recvs = all;
      return start(make_allgatherv(std::move(st), a, s, r, std::move(v)), req);
    case CollOpKind::kGatherv:
      if (is_root) v.recvs = all;
      return start(make_gatherv(std::move(st), a, s, is_root ? r : nullptr, block, std::move(v), root), req);
    case CollOpKind::kScatterv:
      if (is_root) v.sends = all;
      return start(make_scatterv(std::move(st), a, is_root ? s : nullptr, r, block, std::move(v), root), req);
    case CollOpKind::kAlltoallv:
      v.recvs = all;
      v.sends = all;
      return start(make_alltoallv(std::move(st), a, s, r, block, std::move(v)), req);
    default:
      return false;
  }
}

}  // namespace detail

}  // namespace dtmpi::coll
