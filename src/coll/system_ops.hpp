// The system MPI's own collective of each kind dtmpi implements, in one
// place for the tools that time dtmpi's algorithms against it (dtmpi-tune,
// dtmpi-bench coll): one call shape for all of them.
#pragma once
#include <mpi.h>

#include "coll/coll.hpp"

namespace dtmpi::coll {

// Runs `op` through the system MPI on `comm` with `count` elements of `type`
// per rank block (a reduction's whole vector; Reduce_scatter_block's block),
// `mop` for the reductions and `root` for the rooted ones; with `req`, the
// MPI_I* form is started and *req is the system MPI's request. `in` and `out`
// hold n blocks where the operation reads or writes n (Allgather's and
// Alltoall's receive side, Gather's root, Scatter's root, Alltoall's and
// Reduce_scatter_block's input). Returns the MPI return code.
int system_collective(CollOpKind op, const void* in, void* out, int count, MPI_Datatype type, MPI_Op mop, int root,
                      MPI_Comm comm, MPI_Request* req = nullptr);

// Whether `op`'s buffers hold one block per rank on some side (the data-moving
// ones and Reduce_scatter_block): a caller sizes them n times a block.
bool moves_blocks_per_rank(CollOpKind op);

}  // namespace dtmpi::coll
