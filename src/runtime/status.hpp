// Statuses as the system MPI leaves them. An application must read the same
// MPI_SOURCE, MPI_TAG, MPI_ERROR, count and cancelled flag with dtmpi as
// without it (issue 20; tests/mpi/status_fidelity.cpp). Three rules follow:
//  * a status dtmpi passes to the system MPI on the application's behalf
//    starts as a copy of the application's own, so the fields the call leaves
//    alone keep the application's values (MPI_ERROR after single completions
//    and probes (the standard's rule) and whatever a given MPI does not
//    fill, e.g. MPICH's statuses of failed multiple completions);
//  * MPI_ERROR is written where the system MPI's own call would write it,
//    which differs by MPI and call (MPICH's MPI_Probe and
//    MPI_Sendrecv_replace write it, Open MPI's do not): learned from the
//    system MPI's calls (ErrorWrites);
//  * a message dtmpi receives as packed bytes reports its byte count, which
//    gives the application's type the answers its own receive would.
#pragma once
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtmpi::runtime {

// A value no MPI stores in MPI_ERROR: marks the field "not written by the call".
inline constexpr int kErrorUnwritten = INT_MIN + 0x5a;

// A copy of `user` (zeros for MPI_STATUS_IGNORE) with MPI_ERROR marked unwritten.
MPI_Status seeded(const MPI_Status* user);

// Gives a status seeded() for the application's `user` back to it: MPI_ERROR
// stays the application's where the call left it unwritten.
void give_back(const MPI_Status& st, MPI_Status* user);

// The statuses of one Wait/Test call: copies of the application's, MPI_ERROR
// marked, so dtmpi can tell what the system MPI's call wrote.
class CallStatuses {
 public:
  // `user`: the application's array (or MPI_STATUS(ES)_IGNORE) of `n` statuses.
  CallStatuses(const MPI_Status* user, int n);
  MPI_Status* data() { return st_.data(); }
  MPI_Status& operator[](std::size_t i) { return st_[i]; }
  // After the system MPI's call returned `rc`: each status's MPI_ERROR as
  // dtmpi's finishing reads it (what the call wrote; else `rc` for a single
  // completion, MPI_SUCCESS in a multiple one). Remembers what was written.
  void settle(int rc, bool single);
  // Status i back to the application at `out` (unless ignored), MPI_ERROR as
  // the system MPI's call left it.
  void copy_out(std::size_t i, MPI_Status* out) const;
  // The error of status i is `code` (a dtmpi operation's own): given back
  // only where the call wrote MPI_ERROR.
  void set_error(std::size_t i, int code) { st_[i].MPI_ERROR = code; }
  bool written(std::size_t i) const { return written_[i] != 0; }

 private:
  std::vector<MPI_Status> st_;
  std::vector<int> user_error_;
  std::vector<char> written_;
};

// Whether the system MPI's calls of a kind write MPI_ERROR on success, as
// observed: probes that found a message (MPICH: MPI_Probe/MPI_Iprobe yes,
// MPI_Mprobe/MPI_Improbe no; Open MPI: none), MPI_Sendrecv, MPI_Sendrecv_replace.
enum class ErrorWrites : uint8_t { kIprobe, kImprobe, kSendrecv, kSendrecvReplace, kCount };
// Records one observation (`st` was seeded() before the system call).
void observe_error_write(ErrorWrites call, const MPI_Status& st);
// What was observed; for the send-receives, learned at the first use from
// the system MPI's own call with MPI_PROC_NULL on both ends (local, cheap).
bool writes_error(ErrorWrites call);

// Where dtmpi decides a truncation itself (a multi-message transfer longer
// than the receive): the byte count the system MPI reports for a truncated
// receive. Open MPI: the whole message; MPICH: the bytes that fit (its ch3
// and MPIDIG paths; ch4:ucx leaves the count of a truncated receive unset,
// the stale count of a recycled request, which nobody can reproduce).
int64_t truncated_count(int64_t message_bytes, int64_t receive_bytes);

// Sets the byte count of `st` (any count fits: MPI_Count).
void set_bytes(MPI_Status* st, int64_t bytes);

}  // namespace dtmpi::runtime
