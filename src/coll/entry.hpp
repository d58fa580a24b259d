// What the entries (coll.cpp, coll_move.cpp) share: which calls dtmpi's
// algorithms may serve and how an operation is started.
#pragma once
#include <mpi.h>

#include <memory>

#include "base/result.hpp"
#include "coll/coll.hpp"
#include "coll/ops.hpp"

namespace dtmpi::coll::detail {

// The state of an intracommunicator whose collectives dtmpi may serve; null
// otherwise. Only a blocking call creates it (collective; a non-blocking one
// must not block), so until then non-blocking calls stay the system MPI's.
Result<std::shared_ptr<CommState>> usable(MPI_Comm comm, bool blocking);
// usable, or for a blocking call on a communicator spanning nodes, its state
// with the hierarchy (coll/hierarchy.hpp; no segment): Barrier, Bcast,
// Reduce and Allreduce serve those through it.
Result<std::shared_ptr<CommState>> usable_or_hierarchy(MPI_Comm comm, bool blocking);
// Whether dtmpi's algorithms may serve a call on `comm` (false: DTMPI_COLL=system,
// a null communicator). First in every entry, before any check that may
// differ between ranks: a blocking call creates the communicator's state here
// whatever algorithm the call then gets (collective: every rank is in the
// same blocking call), so that from the first blocking collective on, every
// rank's non-blocking calls find the state and agree on their lane, however
// each rank orders them against blocking ones (coll/comm_state.hpp).
Result<bool> may_serve(MPI_Comm comm, MPI_Request* req);
// The state where dtmpi serves `kind` with `block` bytes per rank (the
// algorithm in `a`; `in_place`: the call passed MPI_IN_PLACE); null where
// the system MPI serves.
Result<std::shared_ptr<CommState>> serving(CollOpKind kind, MPI_Comm comm, int64_t block, MPI_Request* req,
                                           Algorithm& a, bool in_place = false);
// Runs `op` to its end (req null) or behind a request; false for a null op.
Result<bool> start(std::unique_ptr<CollOp> op, MPI_Request* req);
// A reduction's element: contiguous types only.
bool reducer_for(MPI_Datatype type, MPI_Op op, Reducer& r);
int64_t bytes_of(int count, MPI_Datatype type);
int size_of(MPI_Comm comm);
// Arguments the system MPI must see to report them (an invalid root, a
// null communicator or type): dtmpi serves only calls that are valid.
bool valid(MPI_Comm comm, MPI_Datatype type, int root);

// run_forced for the operations of coll_move.cpp (contiguous types only).
Result<bool> run_forced_more(CollOpKind op, Algorithm a, std::shared_ptr<CommState> st, const void* sb, void* rb,
                             int count, MPI_Datatype type, MPI_Op mop, int root, MPI_Request* req);

// run_forced for the v forms (coll_move_v.cpp): every block `count` of `type`.
Result<bool> run_forced_v(CollOpKind op, Algorithm a, std::shared_ptr<CommState> st, const void* sb, void* rb,
                          int count, MPI_Datatype type, int root, MPI_Request* req);

// MPI_Alltoallw on a one-rank communicator, done by dtmpi whatever DTMPI_COLL
// says (alltoallw_self.cpp: Open MPI 4.1's own puts the block in the wrong
// place); false where a block is device memory (the system MPI's call).
Result<bool> alltoallw_self(const void* sb, const int* sc, const int* sd, const MPI_Datatype* st, void* rb,
                            const int* rc, const int* rd, const MPI_Datatype* rt, MPI_Comm comm, MPI_Request* req);

}  // namespace dtmpi::coll::detail
