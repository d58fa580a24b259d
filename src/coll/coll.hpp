// dtmpi's own collectives (src/coll): the entry the interposer calls before
// handing a collective to the system MPI. Each answers whether it served the
// call (blocking: done; non-blocking: *req is dtmpi's request) or left it to
// the system MPI (false: nothing was done). The answer is the same on every
// rank of the communicator: it depends only on DTMPI_COLL, the operation,
// the communicator, the byte count and the (same everywhere) type and op --
// never on where a rank's buffer lives, so a GPU buffer staged by the
// interposer takes the same algorithm on its host copy as a peer's host one.
#pragma once
#include <mpi.h>

#include "base/result.hpp"
#include "coll/ops.hpp"

namespace dtmpi::coll {

enum class CollOpKind {
  kBarrier,
  kBcast,
  kAllreduce,
  kReduce,
  kAllgather,
  kGather,
  kScatter,
  kAlltoall,
  kReduceScatterBlock,
  kScan,
  kExscan,
  kAllgatherv,
  kGatherv,
  kScatterv,
  kAlltoallv,
  kReduceScatter,
  kCount
};

// The algorithm DTMPI_COLL selects for `op` on `n` ranks and `bytes` bytes
// (kSystem: the system MPI's). "tuned" is the built-in choice (select.cpp).
// `nonblocking`: an MPI_I* call (dtmpi-tune's table has "many in flight"
// entries for them). `in_place`: the call passed MPI_IN_PLACE -- looked up
// by that only for the operations in_place_keyed() names.
Algorithm select(CollOpKind op, int n, int64_t bytes, bool nonblocking = false, bool in_place = false);
// Whether dtmpi-tune's table keys `op` by MPI_IN_PLACE: only the operations
// whose in-place form the standard requires on all ranks or none (Allreduce,
// Allgather(v), Alltoall, Reduce_scatter_block), since every rank must
// choose the same algorithm. Not the rooted ones (MPI_IN_PLACE at the root
// only), Scan/Exscan (per rank), nor Reduce_scatter (MPI-4: "not required
// ... on all processes", a rank whose count is 0 may pass a send buffer);
// nor Alltoallv/w, which agree on their largest block first and look up without it.
bool in_place_keyed(CollOpKind op);
// The built-in choice ("tuned" without a table).
Algorithm select_builtin(CollOpKind op, int n, int64_t bytes);
// Whether DTMPI_COLL names any algorithm of dtmpi's (one relaxed load).
bool enabled();
// Whether DTMPI_COLL may let dtmpi's algorithms serve `op` at all (named, or
// tuned); false for kCount (operations they never serve). The same on every rank.
bool enabled(CollOpKind op);
// Gatherv, Scatterv and Alltoallv, whose ranks know only their own blocks:
// a call agrees on the largest block before it can choose (see the entries
// below) -- a non-blocking one inside its own state machine (the agreement,
// then the data's algorithm, on numbers reserved when it started).
bool needs_agreement(CollOpKind op);
// Whether dtmpi's algorithms can serve `op`'s non-blocking form: all can.
bool serves_nonblocking(CollOpKind op);
// For the non-blocking Gatherv, Scatterv and Alltoallv on `n` ranks: whether
// dtmpi serves them (then all the way: after the agreement the call cannot
// go to the system MPI, whose collectives the other ranks may have started
// in another order meanwhile). Forced (op:algorithm): yes. Tuned: where
// dtmpi-tune's table chose dtmpi's algorithm in flight in every size class.
// Without a table: no. The same answer on every rank.
bool agrees_first_nonblocking(CollOpKind op, int n);
// The algorithm such a call takes once the largest block is agreed: select's
// in-flight choice, or the operation's first algorithm where that is the
// system MPI's.
Algorithm nonblocking_after_agreement(CollOpKind op, int n, int64_t largest);
// For those: whether a blocking call on `n` ranks agrees on the largest
// block and then takes select's choice for it (the system MPI's included);
// false: every call is the system MPI's, with no agreement. Forced
// (op:algorithm): yes. Tuned with dtmpi-tune's table: where the table chose
// dtmpi's algorithm in some size class and, in every class where it chose the
// system MPI's, that took at least 50 times the table's 8-byte Allreduce (the
// agreement then adds at most 2% there). Without a table: no. The same
// answer on every rank.
bool agrees_first(CollOpKind op, int n);
// What an entry chooses for `op` with blocks of `bytes` (after the agreement
// where one is needed): dtmpi-bench's "tuned" column.
Algorithm choice(CollOpKind op, int n, int64_t bytes, bool nonblocking = false);
// MPI_Init (collective over `world`): under DTMPI_COLL=tuned, reads
// dtmpi-tune's table (coll/tuning_table.hpp) and keeps it where every rank of
// the node read the same one; "tuned" is the built-in choice otherwise.
Status init_tuning(MPI_Comm world);

// Creates the collective state of `comm` (its lanes, segments or node
// hierarchy) while every member is in the call that creates it --
// MPI_Comm_dup/split/create and the topology constructors -- so that its
// non-blocking collectives are dtmpi's from the first one on (without, a
// state is made at its first blocking collective, and the non-blocking ones
// before it stay the system MPI's). Collective over `comm`; only where
// DTMPI_COLL names dtmpi's algorithms; an intercommunicator or a failure
// (logged) leaves the state to be made later.
void prepare(MPI_Comm comm);

Result<bool> barrier(MPI_Comm comm, MPI_Request* req);
Result<bool> bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* req);
Result<bool> allreduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                       MPI_Request* req);
Result<bool> reduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                    MPI_Request* req);
// The data-moving ones serve any datatype (a non-contiguous side is packed
// and unpacked here): the per-rank byte count alone decides.
Result<bool> allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                       MPI_Request* req);
Result<bool> alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                      MPI_Request* req);
Result<bool> gather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                    MPI_Comm comm, MPI_Request* req);
Result<bool> scatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                     MPI_Comm comm, MPI_Request* req);
Result<bool> reduce_scatter_block(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                  MPI_Request* req);
// The v forms (any datatype, packed like the uniform ones). Allgatherv:
// every rank knows every block's size. Gatherv, Scatterv and Alltoallv: a rank
// knows its own blocks only, so the calls first agree on the largest block
// (one 8-byte allreduce of dtmpi's; a choice every rank must make alike
// depends on it) -- the blocking ones where agrees_first, the non-blocking
// ones inside their own operation where agrees_first_nonblocking.
Result<bool> allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                        MPI_Datatype rt, MPI_Comm comm, MPI_Request* req);
Result<bool> gatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                     MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req);
Result<bool> scatterv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, int rc,
                      MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req);
Result<bool> alltoallv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, const int* rc,
                       const int* rd, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req);
// Alltoallw: Alltoallv's algorithm (DTMPI_COLL's alltoallv, the table's
// Alltoallv cells) once every block is bytes.
Result<bool> alltoallw(const void* sb, const int* sc, const int* sd, const MPI_Datatype* st, void* rb, const int* rc,
                       const int* rd, const MPI_Datatype* rt, MPI_Comm comm, MPI_Request* req);
// MPI_Reduce_scatter: rank j's result is counts[j] elements (contiguous
// types, like the other reductions; every rank knows every count).
Result<bool> reduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype type, MPI_Op op,
                            MPI_Comm comm, MPI_Request* req);
// MPI_Scan (exclusive false) / MPI_Exscan
Result<bool> scan(bool exclusive, const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                  MPI_Request* req);

// For dtmpi-bench and dtmpi-tune: runs `op` with algorithm `a` forced
// (kSystem: false); with `req`, starts it as the MPI_I* form (the
// communicator's state must exist: a blocking call made it) and *req is
// dtmpi's request, completed by the engine's progress (transport::progress).
Result<bool> run_forced(CollOpKind op, Algorithm a, const void* sb, void* rb, int count, MPI_Datatype type,
                        MPI_Op mop, int root, MPI_Comm comm, MPI_Request* req = nullptr);

}  // namespace dtmpi::coll
