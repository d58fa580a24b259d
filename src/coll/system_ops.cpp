// coll/system_ops.hpp: the system MPI's collectives (REAL: dtmpi's own
// entries must not serve them, or a tool would time dtmpi against itself).
#include "coll/system_ops.hpp"

#include "base/system_mpi.hpp"

namespace dtmpi::coll {

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
      return MPI_ERR_OP;
  }
}

bool moves_blocks_per_rank(CollOpKind op) {
  switch (op) {
    case CollOpKind::kAllgather:
    case CollOpKind::kGather:
    case CollOpKind::kScatter:
    case CollOpKind::kAlltoall:
    case CollOpKind::kReduceScatterBlock:
      return true;
    default:
      return false;
  }
}

}  // namespace dtmpi::coll
