// The entries of Allgather, Alltoall, Gather, Scatter (any datatype: a
// non-contiguous side is packed here -- dtmpi's CPU packer, or the system
// MPI's MPI_Pack for a type it cannot plan -- and the receive side unpacked
// after the last chunk), Reduce_scatter_block, Scan and Exscan (contiguous
// types, like the other reductions). What decides whether dtmpi serves is
// the same on every rank: DTMPI_COLL, the operation, the communicator and
// the bytes per rank (equal everywhere by MPI's type matching), never a
// rank's datatype layout or buffer location.
#include <algorithm>
#include <vector>

#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "coll/entry.hpp"
#include "coll/hierarchy.hpp"
#include "coll/sides.hpp"
#include "runtime/stats.hpp"

namespace dtmpi::coll {

using namespace detail;

Result<bool> allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                       MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || (!in_place && st == MPI_DATATYPE_NULL)) return false;
  const int64_t block = in_place ? bytes_of(rc, rt) : bytes_of(sc, st);
  Algorithm a{};
  auto state = serving(CollOpKind::kAllgather, comm, block, req, a, in_place);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size, me = state.value()->rank;
  int pack_rc = MPI_SUCCESS;
  Side recv = side(rb, int64_t{rc} * n, rt, in_place, comm, pack_rc);
  Side send = in_place ? Side{} : side(sb, sc, st, true, comm, pack_rc);
  const char* mine = in_place ? recv.data + me * block : send.data;
  auto op = make_allgather(std::move(state.value()), a, mine, recv.data, block);
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

namespace {

// A blocking Alltoall on a communicator spanning nodes: node-aggregated
// (coll/hierarchy.hpp) wherever DTMPI_COLL names an algorithm for the
// operation; false elsewhere (one node: the caller's algorithms).
Result<bool> aggregated_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                 MPI_Comm comm, int64_t block) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (select(CollOpKind::kAlltoall, size_of(comm), block, false, in_place) == Algorithm::kSystem) return false;
  auto state = usable_or_hierarchy(comm, true);
  if (!state) return state.error();
  if (!state.value() || state.value()->seg || !state.value()->hier) return false;
  if (!aggregated_fits(*state.value()->hier, block)) return false;  // before anything is packed
  const int n = state.value()->size;
  int pack_rc = MPI_SUCCESS;
  Side recv = side(rb, int64_t{rc} * n, rt, in_place, comm, pack_rc);
  Side send = in_place ? Side{} : side(sb, int64_t{sc} * n, st, true, comm, pack_rc);
  auto served = hier_alltoall(*state.value()->hier, in_place ? recv.data : send.data, recv.data, block);
  if (!served || !served.value()) return served;  // the same answer on every rank, before any message
  runtime::count(runtime::Counter::kTunedCollectives);
  if (pack_rc != MPI_SUCCESS) return Error{pack_rc, "packing an Alltoall's send side failed"};
  if (recv.is_packed) {
    const int unpacked = unpacker(recv, comm)();
    if (unpacked != MPI_SUCCESS) return Error{unpacked, "unpacking an Alltoall's receive side failed"};
  }
  return true;
}

}  // namespace

Result<bool> alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                      MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || (!in_place && st == MPI_DATATYPE_NULL)) return false;
  const int64_t block = in_place ? bytes_of(rc, rt) : bytes_of(sc, st);
  if (!req && block > 0) {
    auto aggregated = aggregated_alltoall(sb, sc, st, rb, rc, rt, comm, block);
    if (!aggregated || aggregated.value()) return aggregated;
  }
  Algorithm a{};
  auto state = serving(CollOpKind::kAlltoall, comm, block, req, a, in_place);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  int pack_rc = MPI_SUCCESS;
  Side recv = side(rb, int64_t{rc} * n, rt, in_place, comm, pack_rc);
  Side send = in_place ? Side{} : side(sb, int64_t{sc} * n, st, true, comm, pack_rc);
  auto op = make_alltoall(std::move(state.value()), a, in_place ? recv.data : send.data, recv.data, block);
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

Result<bool> gather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                    MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, MPI_BYTE, root)) return false;
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  const bool is_root = me == root, in_place = is_root && sb == MPI_IN_PLACE;
  if ((is_root && rt == MPI_DATATYPE_NULL) || (!in_place && st == MPI_DATATYPE_NULL)) return false;
  const int64_t block = in_place ? bytes_of(rc, rt) : bytes_of(sc, st);
  Algorithm a{};
  auto state = serving(CollOpKind::kGather, comm, block, req, a);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  int pack_rc = MPI_SUCCESS;
  Side recv = is_root ? side(rb, int64_t{rc} * n, rt, in_place, comm, pack_rc) : Side{};
  Side send = in_place ? Side{} : side(sb, sc, st, true, comm, pack_rc);
  const char* mine = in_place ? recv.data + root * block : send.data;
  auto op = make_gather(std::move(state.value()), a, mine, recv.data, block, root);
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

Result<bool> scatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                     MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, MPI_BYTE, root)) return false;
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  const bool is_root = me == root, in_place = is_root && rb == MPI_IN_PLACE;
  if ((is_root && st == MPI_DATATYPE_NULL) || (!in_place && rt == MPI_DATATYPE_NULL)) return false;
  const int64_t block = is_root ? bytes_of(sc, st) : bytes_of(rc, rt);
  Algorithm a{};
  auto state = serving(CollOpKind::kScatter, comm, block, req, a);
  if (!state) return state.error();
  if (!state.value()) return false;
  const int n = state.value()->size;
  int pack_rc = MPI_SUCCESS;
  Side send = is_root ? side(sb, int64_t{sc} * n, st, true, comm, pack_rc) : Side{};
  Side recv = in_place ? Side{} : side(rb, rc, rt, false, comm, pack_rc);
  auto op = make_scatter(std::move(state.value()), a, send.data, recv.data, block, root);
  return launch(std::move(op), std::move(send), std::move(recv), pack_rc, comm, req);
}

Result<bool> reduce_scatter_block(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                  MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (count <= 0 || !valid(comm, type, 0) || !rb) return false;
  Reducer r{};
  if (!reducer_for(type, op, r)) return false;
  Algorithm a{};
  auto state = serving(CollOpKind::kReduceScatterBlock, comm, count * r.elem, req, a, sb == MPI_IN_PLACE);
  if (!state) return state.error();
  if (!state.value()) return false;
  return start(make_reduce_scatter_block(std::move(state.value()), a, sb == MPI_IN_PLACE ? rb : sb, rb, count, r),
               req);
}

Result<bool> reduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype type, MPI_Op op,
                            MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!counts || !valid(comm, type, 0)) return false;
  Reducer r{};
  if (!reducer_for(type, op, r)) return false;
  const int n = size_of(comm);
  std::vector<int64_t> elems(counts, counts + n);
  int64_t largest = 0;
  for (int64_t c : elems) largest = std::max(largest, c);
  // a rank whose block is empty may pass no receive buffer (and need not be
  // in place, MPI-4): it must still choose as the others do, so neither
  // decides here; it gets a stand-in that nothing is written to
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  static char no_block;
  // in place the receive buffer holds the whole input: none is erroneous too
  if (!rb && (elems[static_cast<size_t>(me)] > 0 || sb == MPI_IN_PLACE)) return false;  // the system MPI reports it
  void* out = rb ? rb : &no_block;
  Algorithm a{};
  auto state = serving(CollOpKind::kReduceScatter, comm, largest * r.elem, req, a);
  if (!state) return state.error();
  if (!state.value()) return false;
  return start(make_reduce_scatter(std::move(state.value()), a, sb == MPI_IN_PLACE ? out : sb, out, std::move(elems), r),
               req);
}

Result<bool> scan(bool exclusive, const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                  MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (count <= 0 || !valid(comm, type, 0) || !rb) return false;
  Reducer r{};
  if (!reducer_for(type, op, r)) return false;
  Algorithm a{};
  auto state = serving(exclusive ? CollOpKind::kExscan : CollOpKind::kScan, comm, count * r.elem, req, a);
  if (!state) return state.error();
  if (!state.value()) return false;
  return start(make_scan(std::move(state.value()), a, sb == MPI_IN_PLACE ? rb : sb, rb, count, r, exclusive), req);
}

namespace detail {

Result<bool> run_forced_more(CollOpKind op, Algorithm a, std::shared_ptr<CommState> st, const void* sb, void* rb,
                             int count, MPI_Datatype type, MPI_Op mop, int root, MPI_Request* req) {
  if (!contiguous(count, type)) return false;
  const int64_t block = bytes_of(count, type);
  const bool is_root = st->rank == root;
  char* r = static_cast<char*>(rb);
  // MPI_IN_PLACE as the entries read it: the rank's own block of the receive
  // side (Allgather), the receive side itself (Alltoall and the reductions);
  // the v forms translate it themselves (run_forced_v); the rooted forms in
  // place are not taken (the tools never pass them)
  const bool in_place = sb == MPI_IN_PLACE;
  if (in_place && (op == CollOpKind::kGather || op == CollOpKind::kScatter || op == CollOpKind::kGatherv ||
                   op == CollOpKind::kScatterv || rb == MPI_IN_PLACE))
    return false;
  const bool own_block = op == CollOpKind::kAllgather;
  const char* s = !in_place ? static_cast<const char*>(sb) : own_block ? r + st->rank * block : r;
  if (in_place && op != CollOpKind::kAllgatherv && op != CollOpKind::kAlltoallv) sb = s;
  Reducer red{};
  switch (op) {
    case CollOpKind::kAllgather:
      return start(make_allgather(std::move(st), a, s, r, block), req);
    case CollOpKind::kAlltoall:
      return start(make_alltoall(std::move(st), a, s, r, block), req);
    case CollOpKind::kGather:
      return start(make_gather(std::move(st), a, s, is_root ? r : nullptr, block, root), req);
    case CollOpKind::kScatter:
      return start(make_scatter(std::move(st), a, is_root ? s : nullptr, r, block, root), req);
    case CollOpKind::kReduceScatterBlock:
      if (!reducer_for(type, mop, red)) return false;
      return start(make_reduce_scatter_block(std::move(st), a, sb, rb, count, red), req);
    case CollOpKind::kReduceScatter:
    {
      if (!reducer_for(type, mop, red)) return false;
      std::vector<int64_t> counts(static_cast<size_t>(st->size), count);
      return start(make_reduce_scatter(std::move(st), a, sb, rb, std::move(counts), red), req);
    }
    case CollOpKind::kScan:
    case CollOpKind::kExscan:
      if (!reducer_for(type, mop, red)) return false;
      return start(make_scan(std::move(st), a, sb, rb, count, red, op == CollOpKind::kExscan), req);
    case CollOpKind::kAllgatherv:
    case CollOpKind::kGatherv:
    case CollOpKind::kScatterv:
    case CollOpKind::kAlltoallv:
      return run_forced_v(op, a, std::move(st), sb, rb, count, type, root, req);
    default:
      return false;
  }
}

}  // namespace detail

}  // namespace dtmpi::coll
