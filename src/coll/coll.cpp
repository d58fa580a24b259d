// The entries: which calls dtmpi's algorithms serve (an intracommunicator of
// one node, DTMPI_COLL naming an algorithm, a type the algorithm takes), the
// blocking form (start + step to the end) and the non-blocking one (the same
// operation behind a generalized request of the engine's).
#include "coll/coll.hpp"

#include "coll/entry.hpp"
#include "coll/hierarchy.hpp"

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "runtime/stats.hpp"

namespace dtmpi::coll {

namespace detail {

Result<std::shared_ptr<CommState>> usable_or_hierarchy(MPI_Comm comm, bool blocking) {
  if (comm == MPI_COMM_NULL) return std::shared_ptr<CommState>();
  int inter = 0;
  REAL(MPI_Comm_test_inter)(comm, &inter);
  if (inter) return std::shared_ptr<CommState>();
  auto st = state_for(comm, blocking);
  if (!st) return st.error();
  if (!st.value()) return st;
  if (!blocking) return st.value()->nonblocking;  // null: spans nodes (hierarchical: blocking only)
  if (!(st.value()->seg || st.value()->hier)) return std::shared_ptr<CommState>();
  return st;
}

Result<std::shared_ptr<CommState>> usable(MPI_Comm comm, bool blocking) {
  auto st = usable_or_hierarchy(comm, blocking);
  if (!st) return st.error();
  if (!st.value() || !st.value()->seg) return std::shared_ptr<CommState>();
  return st;
}

Result<bool> may_serve(MPI_Comm comm, MPI_Request* req) {
  if (!enabled() || comm == MPI_COMM_NULL) return false;
  // never an intercommunicator's: the entries read their per-rank arrays by
  // the local group's size, where an intercommunicator's hold the remote
  // group's (MPICH's icalltoallw: garbage types past the arrays' end, then
  // MPI_ERR_TYPE from MPI_Type_size, under every DTMPI_COLL of session 27)
  int inter = 0;
  if (REAL(MPI_Comm_test_inter)(comm, &inter) != MPI_SUCCESS || inter) return false;
  if (!req) {
    auto st = usable_or_hierarchy(comm, true);
    if (!st) return st.error();
  }
  return true;
}

Result<std::shared_ptr<CommState>> serving(CollOpKind kind, MPI_Comm comm, int64_t block, MPI_Request* req,
                                           Algorithm& a, bool in_place) {
  a = block > 0 ? select(kind, size_of(comm), block, req != nullptr, in_place) : Algorithm::kSystem;
  if (a == Algorithm::kSystem) return std::shared_ptr<CommState>();
  return usable(comm, !req);
}

// A hierarchical collective was served (counted as dtmpi's).
Result<bool> counted(Result<bool> served) {
  if (served && served.value()) runtime::count(runtime::Counter::kTunedCollectives);
  return served;
}

Result<bool> start(std::unique_ptr<CollOp> op, MPI_Request* req) {
  if (!op) return false;
  runtime::count(runtime::Counter::kTunedCollectives);
  if (req) {
    DTMPI_TRY(transport::start_with_request(std::move(op), req));
    return true;
  }
  DTMPI_TRY(run_blocking(*op));
  return true;
}

// A reduction's element: contiguous types only (the scratch holds elements
// back to back and MPI_Reduce_local combines them there); the same answer on
// every rank, as MPI requires the same type and op everywhere.
bool reducer_for(MPI_Datatype type, MPI_Op op, Reducer& r) {
  if (type == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return false;
  int size = 0, commute = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  REAL(MPI_Type_size)(type, &size);
  REAL(MPI_Type_get_extent)(type, &lb, &extent);
  REAL(MPI_Type_get_true_extent)(type, &tlb, &textent);
  if (size <= 0 || tlb != 0 || textent != size || extent != size) return false;
  if (REAL(MPI_Op_commutative)(op, &commute) != MPI_SUCCESS) return false;
  r = Reducer{type, op, commute != 0, size, local_reduce_for(op, type)};
  return true;
}

int64_t bytes_of(int count, MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  REAL(MPI_Type_size)(type, &size);
  return int64_t{count} * size;
}

int size_of(MPI_Comm comm) {
  int n = 0;
  if (comm != MPI_COMM_NULL) REAL(MPI_Comm_size)(comm, &n);
  return n;
}

bool valid(MPI_Comm comm, MPI_Datatype type, int root) {
  const int n = size_of(comm);
  return n > 0 && type != MPI_DATATYPE_NULL && root >= 0 && root < n;
}

}  // namespace detail

using namespace detail;

void prepare(MPI_Comm comm) {
  if (!enabled() || comm == MPI_COMM_NULL) return;
  int inter = 0;
  if (REAL(MPI_Comm_test_inter)(comm, &inter) != MPI_SUCCESS || inter) return;
  if (auto st = state_for(comm, true); !st)
    DTMPI_LOG(kDebug, "collective state at creation: %s (made at the first blocking collective instead)",
              st.error().what.c_str());
}

Result<bool> barrier(MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  const Algorithm a = select(CollOpKind::kBarrier, size_of(comm), 0, req != nullptr);
  if (a == Algorithm::kSystem) return false;
  auto st = usable_or_hierarchy(comm, !req);
  if (!st) return st.error();
  if (!st.value()) return false;
  if (!st.value()->seg) return counted(hier_barrier(*st.value()->hier));
  return start(make_barrier(std::move(st.value()), a), req);
}

Result<bool> bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (count <= 0 || !valid(comm, type, root)) return false;
  const Algorithm a = select(CollOpKind::kBcast, size_of(comm), bytes_of(count, type), req != nullptr);
  if (a == Algorithm::kSystem) return false;
  auto st = usable_or_hierarchy(comm, !req);
  if (!st) return st.error();
  if (!st.value()) return false;
  if (!st.value()->seg) return counted(hier_bcast(*st.value()->hier, buf, count, type, root));
  return start(make_bcast(std::move(st.value()), a, buf, count, type, root, comm), req);
}

Result<bool> allreduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (count <= 0 || !valid(comm, type, 0) || !rb) return false;
  Reducer r{};
  if (!reducer_for(type, op, r)) return false;
  const Algorithm a =
      select(CollOpKind::kAllreduce, size_of(comm), count * r.elem, req != nullptr, sb == MPI_IN_PLACE);
  if (a == Algorithm::kSystem) return false;
  auto st = usable_or_hierarchy(comm, !req);
  if (!st) return st.error();
  if (!st.value()) return false;
  if (!st.value()->seg)
    return counted(hier_reduce(*st.value()->hier, sb == MPI_IN_PLACE ? rb : sb, rb, count, type, op, -1, r.elem,
                               r.commutative));
  return start(make_allreduce(std::move(st.value()), a, sb == MPI_IN_PLACE ? rb : sb, rb, count, r), req);
}

Result<bool> reduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                    MPI_Request* req) {
  if (auto m = may_serve(comm, req); !m || !m.value()) return m;
  if (count <= 0 || !valid(comm, type, root)) return false;
  Reducer r{};
  if (!reducer_for(type, op, r)) return false;
  const Algorithm a = select(CollOpKind::kReduce, size_of(comm), count * r.elem, req != nullptr);
  if (a == Algorithm::kSystem) return false;
  auto st = usable_or_hierarchy(comm, !req);
  if (!st) return st.error();
  if (!st.value()) return false;
  const void* in = sb == MPI_IN_PLACE ? rb : sb;  // MPI_IN_PLACE only at the root
  if (!st.value()->seg)
    return counted(hier_reduce(*st.value()->hier, in, rb, count, type, op, root, r.elem, r.commutative));
  return start(make_reduce(std::move(st.value()), a, in, rb, count, r, root), req);
}

Result<bool> run_forced(CollOpKind op, Algorithm a, const void* sb, void* rb, int count, MPI_Datatype type,
                        MPI_Op mop, int root, MPI_Comm comm, MPI_Request* req) {
  if (a == Algorithm::kSystem || !valid(comm, type, root)) return false;
  auto st = usable(comm, !req);
  if (!st) return st.error();
  if (!st.value() || !st.value()->seg) return false;  // one node only (the hierarchy's phases call this)
  Reducer r{};
  switch (op) {
    case CollOpKind::kBarrier:
      return start(make_barrier(std::move(st.value()), a), req);
    case CollOpKind::kBcast:
      return start(make_bcast(std::move(st.value()), a, rb, count, type, root, comm), req);
    case CollOpKind::kAllreduce:
      if (!reducer_for(type, mop, r)) return false;
      return start(make_allreduce(std::move(st.value()), a, sb == MPI_IN_PLACE ? rb : sb, rb, count, r), req);
    case CollOpKind::kReduce:
      if (!reducer_for(type, mop, r)) return false;
      return start(make_reduce(std::move(st.value()), a, sb == MPI_IN_PLACE ? rb : sb, rb, count, r, root), req);
    default:
      return run_forced_more(op, a, std::move(st.value()), sb, rb, count, type, mop, root, req);
  }
}

}  // namespace dtmpi::coll
