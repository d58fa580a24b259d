// coll/system_ops.hpp: the system MPI's collectives (REAL: dtmpi's own
// entries must not serve them, or a tool would time dtmpi against itself).
#include "coll/system_ops.hpp"

#include <map>
#include <utility>
#include <vector>

#include "base/system_mpi.hpp"

namespace dtmpi::coll {

namespace {

// The v forms and Reduce_scatter with every block `count` of `t` in rank order.
int system_collective_v(CollOpKind op, const void* in, void* out, int count, MPI_Datatype t, MPI_Op mop, int root,
                        MPI_Comm comm, MPI_Request* req) {
  int n = 0;
  REAL(MPI_Comm_size)(comm, &n);
  // a non-blocking call reads the arrays until it completes: kept for the
  // process's life per size (the tools' few shapes)
  static std::map<std::pair<int, int>, std::pair<std::vector<int>, std::vector<int>>> arrays;
  auto& [counts, displs] = arrays[{n, count}];
  if (counts.empty()) {
    for (int j = 0; j < n; ++j) {
      counts.push_back(count);
      displs.push_back(j * count);
    }
  }
  const int* c = counts.data();
  const int* d = displs.data();
  const bool nb = req != nullptr;
  switch (op) {
    case CollOpKind::kAllgatherv:
      return nb ? REAL(MPI_Iallgatherv)(in, count, t, out, c, d, t, comm, req)
                : REAL(MPI_Allgatherv)(in, count, t, out, c, d, t, comm);
    case CollOpKind::kGatherv:
      return nb ? REAL(MPI_Igatherv)(in, count, t, out, c, d, t, root, comm, req)
                : REAL(MPI_Gatherv)(in, count, t, out, c, d, t, root, comm);
    case CollOpKind::kScatterv:
      return nb ? REAL(MPI_Iscatterv)(in, c, d, t, out, count, t, root, comm, req)
                : REAL(MPI_Scatterv)(in, c, d, t, out, count, t, root, comm);
    case CollOpKind::kAlltoallv:
      return nb ? REAL(MPI_Ialltoallv)(in, c, d, t, out, c, d, t, comm, req)
                : REAL(MPI_Alltoallv)(in, c, d, t, out, c, d, t, comm);
    case CollOpKind::kReduceScatter:
      return nb ? REAL(MPI_Ireduce_scatter)(in, out, c, t, mop, comm, req)
                : REAL(MPI_Reduce_scatter)(in, out, c, t, mop, comm);
    default:
      return MPI_ERR_OP;
  }
}

}  // namespace

int system_collective(CollOpKind op, const void* in, void* out, int count, MPI_Datatype t, MPI_Op mop, int root,
                      MPI_Comm comm, MPI_Request* req) {
  const bool nb = req != nullptr;
  switch (op) {
    case CollOpKind::kBarrier:
      return nb ? REAL(MPI_Ibarrier)(comm, req) : REAL(MPI_Barrier)(comm);
    case CollOpKind::kBcast:
      return nb ? REAL(MPI_Ibcast)(out, count, t, root, comm, req) : REAL(MPI_Bcast)(out, count, t, root, comm);
    case CollOpKind::kAllreduce:
      return nb ? REAL(MPI_Iallreduce)(in, out, count, t, mop, comm, req)
                : REAL(MPI_Allreduce)(in, out, count, t, mop, comm);
    case CollOpKind::kReduce:
      return nb ? REAL(MPI_Ireduce)(in, out, count, t, mop, root, comm, req)
                : REAL(MPI_Reduce)(in, out, count, t, mop, root, comm);
    case CollOpKind::kAllgather:
      return nb ? REAL(MPI_Iallgather)(in, count, t, out, count, t, comm, req)
                : REAL(MPI_Allgather)(in, count, t, out, count, t, comm);
    case CollOpKind::kGather:
      return nb ? REAL(MPI_Igather)(in, count, t, out, count, t, root, comm, req)
                : REAL(MPI_Gather)(in, count, t, out, count, t, root, comm);
    case CollOpKind::kScatter:
      return nb ? REAL(MPI_Iscatter)(in, count, t, out, count, t, root, comm, req)
                : REAL(MPI_Scatter)(in, count, t, out, count, t, root, comm);
    case CollOpKind::kAlltoall:
      return nb ? REAL(MPI_Ialltoall)(in, count, t, out, count, t, comm, req)
                : REAL(MPI_Alltoall)(in, count, t, out, count, t, comm);
    case CollOpKind::kReduceScatterBlock:
      return nb ? REAL(MPI_Ireduce_scatter_block)(in, out, count, t, mop, comm, req)
                : REAL(MPI_Reduce_scatter_block)(in, out, count, t, mop, comm);
    case CollOpKind::kScan:
      return nb ? REAL(MPI_Iscan)(in, out, count, t, mop, comm, req) : REAL(MPI_Scan)(in, out, count, t, mop, comm);
    case CollOpKind::kExscan:
      return nb ? REAL(MPI_Iexscan)(in, out, count, t, mop, comm, req)
                : REAL(MPI_Exscan)(in, out, count, t, mop, comm);
    default:
      return system_collective_v(op, in, out, count, t, mop, root, comm, req);
  }
}

bool moves_blocks_per_rank(CollOpKind op) {
  switch (op) {
    case CollOpKind::kAllgather:
    case CollOpKind::kGather:
    case CollOpKind::kScatter:
    case CollOpKind::kAlltoall:
    case CollOpKind::kReduceScatterBlock:
    case CollOpKind::kAllgatherv:
    case CollOpKind::kGatherv:
    case CollOpKind::kScatterv:
    case CollOpKind::kAlltoallv:
    case CollOpKind::kReduceScatter:
      return true;
    default:
      return false;
  }
}

}  // namespace dtmpi::coll
