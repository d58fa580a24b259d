// The entries of Allgather, Alltoall, Gather, Scatter (any datatype: a
// non-contiguous side is packed here -- dtmpi's CPU packer, or the system
// MPI's MPI_Pack for a type it cannot plan -- and the receive side unpacked
// after the last chunk), Reduce_scatter_block, Scan and Exscan (contiguous
// types, like the other reductions). What decides whether dtmpi serves is
// the same on every rank: DTMPI_COLL, the operation, the communicator and
// the bytes per rank (equal everywhere by MPI's type matching), never a
// rank's datatype layout or buffer location.
#include <climits>

#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "coll/entry.hpp"
#include "pack/cpu_pack.hpp"
#include "type/registry.hpp"

namespace dtmpi::coll {

using namespace detail;

namespace {

// One side of a data-moving collective as contiguous bytes: the user's
// buffer itself where (count, type) is contiguous, else a packed copy.
struct Side {
  char* data = nullptr;
  std::vector<char> packed;
  bool is_packed = false;
  void* user = nullptr;
  int64_t count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

bool contiguous(int64_t count, MPI_Datatype t) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  REAL(MPI_Type_size)(t, &size);
  REAL(MPI_Type_get_extent)(t, &lb, &extent);
  REAL(MPI_Type_get_true_extent)(t, &tlb, &textent);
  return tlb == 0 && textent == size && (count == 1 || extent == size);
}

int pack_into(const void* user, int64_t count, MPI_Datatype t, char* out, int64_t bytes, MPI_Comm comm) {
  if (type::PlanPtr plan = type::plan_for(t)) {
    pack::pack_host(*plan, count, user, out);
    return MPI_SUCCESS;
  }
  if (count > INT_MAX || bytes > INT_MAX) return MPI_ERR_COUNT;
  int pos = 0;
  return REAL(MPI_Pack)(user, static_cast<int>(count), t, out, static_cast<int>(bytes), &pos, comm);
}

int unpack_from(const char* in, int64_t bytes, void* user, int64_t count, MPI_Datatype t, MPI_Comm comm) {
  if (type::PlanPtr plan = type::plan_for(t)) {
    pack::unpack_host(*plan, count, in, user);
    return MPI_SUCCESS;
  }
  if (count > INT_MAX || bytes > INT_MAX) return MPI_ERR_COUNT;
  int pos = 0;
  return REAL(MPI_Unpack)(in, static_cast<int>(bytes), &pos, user, static_cast<int>(count), t, comm);
}

// `read`: the side's bytes are input too (MPI_IN_PLACE): packed in first.
Side side(const void* buf, int64_t count, MPI_Datatype t, bool read, MPI_Comm comm, int& rc) {
  Side s;
  s.user = const_cast<void*>(buf);
  s.count = count;
  s.type = t;
  if (contiguous(count, t)) {
    s.data = static_cast<char*>(s.user);
    return s;
  }
  const int64_t bytes = bytes_of(1, t) * count;
  s.packed.resize(static_cast<size_t>(bytes));
  s.data = s.packed.data();
  s.is_packed = true;
  if (read) {
    const int r = pack_into(buf, count, t, s.data, bytes, comm);
    if (rc == MPI_SUCCESS) rc = r;
  }
  return s;
}

// Starts `op` (null: the system MPI serves) owning the packed sides; the
// receive side is unpacked at the end. A failed pack still runs the
// protocol (the peers are in it): the error is the call's.
Result<bool> launch(std::unique_ptr<CollOp> op, Side send, Side recv, int pack_rc, MPI_Comm comm,
                    MPI_Request* req) {
  if (!op) return false;
  if (recv.is_packed) {
    const char* data = recv.data;
    const int64_t bytes = static_cast<int64_t>(recv.packed.size());
    op->finally = [data, bytes, user = recv.user, count = recv.count, type = recv.type, comm] {
      return unpack_from(data, bytes, user, count, type, comm);
    };
  }
  op->keep.push_back(std::move(send.packed));  // moving a vector keeps its storage: the pointers stay valid
  op->keep.push_back(std::move(recv.packed));
  op->error = pack_rc;
  return start(std::move(op), req);
}

// The state where dtmpi serves `kind` with `block` bytes per rank; null otherwise.
Result<std::shared_ptr<CommState>> serving(CollOpKind kind, MPI_Comm comm, int64_t block, MPI_Request* req,
                                           Algorithm& a) {
  a = block > 0 ? select(kind, size_of(comm), block, req != nullptr) : Algorithm::kSystem;
  if (a == Algorithm::kSystem) return std::shared_ptr<CommState>();
  return usable(comm, !req);
}

}  // namespace

Result<bool> allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                       MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || (!in_place && st == MPI_DATATYPE_NULL)) return false;
  const int64_t block = in_place ? bytes_of(rc, rt) : bytes_of(sc, st);
  Algorithm a{};
  auto state = serving(CollOpKind::kAllgather, comm, block, req, a);
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

Result<bool> alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                      MPI_Request* req) {
  const bool in_place = sb == MPI_IN_PLACE;
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (!valid(comm, rt, 0) || (!in_place && st == MPI_DATATYPE_NULL)) return false;
  const int64_t block = in_place ? bytes_of(rc, rt) : bytes_of(sc, st);
  Algorithm a{};
  auto state = serving(CollOpKind::kAlltoall, comm, block, req, a);
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
  auto state = serving(CollOpKind::kReduceScatterBlock, comm, count * r.elem, req, a);
  if (!state) return state.error();
  if (!state.value()) return false;
  return start(make_reduce_scatter_block(std::move(state.value()), a, sb == MPI_IN_PLACE ? rb : sb, rb, count, r),
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
  const char* s = static_cast<const char*>(sb);
  char* r = static_cast<char*>(rb);
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
    case CollOpKind::kScan:
    case CollOpKind::kExscan:
      if (!reducer_for(type, mop, red)) return false;
      return start(make_scan(std::move(st), a, sb, rb, count, red, op == CollOpKind::kExscan), req);
    default:
      return false;
  }
}

}  // namespace detail

}  // namespace dtmpi::coll
