// What dtmpi's collectives keep per communicator: the node segment of the
// one-sided primitives (transport/onesided.hpp), the sequence numbers of the
// collectives started and finished here, the mirror of the peers' progress
// that tells when scratch may be overwritten, and local work buffers.
//
// Kept as an attribute of the communicator (its delete callback frees it at
// MPI_Comm_free / MPI_Finalize, so a reused handle never finds a stale one);
// operations in flight hold their own reference.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "transport/onesided.hpp"

namespace dtmpi::coll {

struct Hierarchy;  // coll/hierarchy.hpp
class ReservedRange;

struct CommState {
  std::unique_ptr<transport::NodeSegment> seg;  // null: not one node (then `hier`, or the system MPI)
  // a communicator spanning nodes: its nodes' communicators and leaders
  // (hierarchical collectives); null for one node, or one rank per node
  std::shared_ptr<Hierarchy> hier;
  // The lane of the non-blocking collectives: a state of its own (sequence
  // numbers, flags, scratch), so that blocking and non-blocking collectives
  // match only among themselves, as the system MPIs match them (separate tag
  // spaces). A program that orders an MPI_Iallreduce and an MPI_Barrier
  // differently on different ranks -- mpi4py's Iagree fallback does -- works
  // with the system MPI; one sequence for both would pair one rank's
  // Iallreduce with another's Barrier. Null in the lane itself.
  std::shared_ptr<CommState> nonblocking;
  int rank = 0, size = 0;
  // Every rank starts its collectives of a lane on a communicator in the same
  // order, so these numbers agree between ranks without a message. Sequence numbers
  // start at 1: a flag of 0 means "nothing yet".
  uint64_t next_seq = 1;   // the next collective (or chunk of one) to start
  uint64_t finished = 0;   // the last one finished here (operations run in order)
  uint64_t min_peer_done = 0;  // mirror: every peer has finished at least this one
  uint64_t counter_expected = 0;  // adds this rank's counter has to see (flat barrier root)
  // local work buffers of the one operation that runs at a time
  std::vector<char> acc, tmp;

  // Reserves `n` sequence numbers (chunks) for a new operation -- or, while
  // a ReservedRange is in scope, hands out the range it holds (once).
  uint64_t reserve(uint64_t n) {
    if (granted_ != 0) {
      const uint64_t first = granted_;
      granted_ = 0;
      return first;
    }
    const uint64_t first = next_seq;
    next_seq += n;
    return first;
  }
  // Whether this rank's slot of `seq` in a ring of `slots` may be written
  // (kScratchSlots for the scratch, kInlineSlots for the inline lines): every
  // peer finished seq - slots, the last one that used it. Re-reads the peers'
  // flags only when the mirror does not prove it (the common case reads nothing).
  bool may_write(uint64_t seq, uint64_t slots);
  // This rank finished `seq`: published for the peers' mirrors.
  void finish(uint64_t seq) {
    finished = seq;
    transport::NodeSegment::signal(seg->flags(rank).done, seq);
  }

 private:
  friend class ReservedRange;
  uint64_t granted_ = 0;  // ReservedRange's range, until an operation takes it
};

// A composite operation that reserved a range of sequence numbers when it
// started and builds its inner operation only later -- the non-blocking
// Gatherv, Scatterv and Alltoallv (coll_move_v.cpp), whose chunks depend on
// an agreement made meanwhile, while other collectives may have started --
// builds it with one of these in scope: the inner operation's constructor
// (CollOp's reserve()) takes the range starting at `first` instead of new
// numbers. The composite checks that the inner operation's chunks fit. The
// grant ends with the scope, taken or not.
class ReservedRange {
 public:
  ReservedRange(CommState& st, uint64_t first) : st_(st) { st_.granted_ = first; }
  ~ReservedRange() { st_.granted_ = 0; }
  ReservedRange(const ReservedRange&) = delete;
  ReservedRange& operator=(const ReservedRange&) = delete;

 private:
  CommState& st_;
};

// The state of `comm` (an intracommunicator), blocking lane. With `may_create`
// (a blocking collective all ranks are in), creates it and its non-blocking
// lane on first use: collective; a communicator that spans nodes gets a state
// without segment (and no lane). Without, null when not created yet
// (non-blocking calls must not block to create it).
Result<std::shared_ptr<CommState>> state_for(MPI_Comm comm, bool may_create);

}  // namespace dtmpi::coll
