// Deterministic reductions (the thesis's footnote to section 4.1; research
// digest claim C21): a communicator whose dtmpi_reduction_keyval() attribute
// is DTMPI_REDUCTION_DETERMINISTIC (include/dtmpi/dtmpi.h) has its
// MPI_Reduce and MPI_Allreduce (and the MPI_I* forms) computed as one fold in
// rank order, ((x_0 op x_1) op x_2) ..., from every rank's input gathered at
// the root (Reduce) or at every rank (Allreduce: an allgather, each rank
// folding the same bytes in the same order): bitwise the same result on every
// run, every rank, whatever tree the system MPI or dtmpi would choose, for any
// datatype and any op MPI_Reduce_local takes. It costs a gather of every
// input: a mode for reproducibility, not speed.
// Intercommunicators keep the system MPI's reduction.
#pragma once
#include <mpi.h>

#include <atomic>

#include "base/result.hpp"

namespace dtmpi::coll {

namespace deterministic_detail {
// Attribute values set to "deterministic" now (any communicator).
extern std::atomic<int> g_live __attribute__((visibility("hidden")));
}  // namespace deterministic_detail

// Whether `comm` asked for deterministic reductions: one relaxed load while
// no communicator has.
bool deterministic_slow(MPI_Comm comm);
inline bool deterministic(MPI_Comm comm) {
  return deterministic_detail::g_live.load(std::memory_order_relaxed) != 0 && deterministic_slow(comm);
}

// The keyval (created at MPI_Init: create_reduction_keyval) and the count of
// its deterministic values (the interposed MPI_Comm_set_attr and the keyval's
// copy and delete callbacks keep it).
Status create_reduction_keyval();
int reduction_keyval();
void note_reduction_attr_set(void* value);

// `root` < 0: Allreduce (every rank gets the result). `req`: the MPI_I* form
// (dtmpi's request). False: not served (an intercommunicator).
Result<bool> deterministic_reduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root,
                                  MPI_Comm comm, MPI_Request* req);

}  // namespace dtmpi::coll
