// The progress engine of multi-message transfers. An Operation is a small
// state machine whose step() advances without blocking (tests system MPI
// requests and GPU markers, starts the next stage). Operations either run in
// the background (the rest of a send whose application request already
// completed) or stand behind a generalized request the application holds (a
// receive that may turn out to be multi-message). Progress runs whenever
// control enters dtmpi; the interposed MPI_Wait* family turns into
// progress + MPI_Test* loops while operations are in flight, so a blocking
// wait never sleeps inside the system MPI while dtmpi work is due.
#pragma once
#include <mpi.h>

#include "base/result.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace dtmpi::transport {

class Operation {
 public:
  virtual ~Operation() = default;
  // Advances without blocking; true when finished (result fields set).
  virtual bool step() = 0;
  // MPI_Cancel of the application's request: best effort.
  virtual void cancel() {}

  // Result, reported in the application's status.
  int source = MPI_ANY_SOURCE;
  int tag = MPI_ANY_TAG;
  int64_t bytes = 0;
  int error = MPI_SUCCESS;
  bool cancelled = false;
  // A receive's status as the system MPI gave it (`has_status`): source, tag,
  // count and cancelled flag are reported from it as the system MPI left them
  // (MPICH leaves some undefined ones stale), with the count of the whole
  // transfer where a descriptor drove the rest (runtime/status.hpp).
  MPI_Status status{};
  bool has_status = false;
  // The system MPI already passed `error` to the communicator's error handler.
  bool error_reported = false;
};

extern std::atomic<int> g_active_ops __attribute__((visibility("hidden")));
// True while any operation is in flight: progress is due.
inline bool busy() { return g_active_ops.load(std::memory_order_relaxed) != 0; }
// Generalized requests of dtmpi's the system MPI still holds (finished or
// not): their completions need the interposed Wait/Test calls' care.
extern std::atomic<int> g_live_requests;
inline bool requests_live() { return g_live_requests.load(std::memory_order_relaxed) != 0; }

// Advances every operation once (never blocks, never recurses).
void progress();
inline void poll() {
  if (busy()) progress();
}

// Hands `op` to the engine; it finishes in the background.
void start_background(std::unique_ptr<Operation> op);
// Hands `op` to the engine behind a new generalized request in `*request`,
// completed when the operation finishes. Returns an MPI error code (then the
// operation, whose system requests may be posted, still runs to its end).
Status start_with_request(std::unique_ptr<Operation> op, MPI_Request* request);
// The errors of operations behind generalized requests, as the system MPI's
// Wait/Test calls of this thread learn them (its query callback): MPICH reports
// a generalized request that failed as MPI_ERR_OTHER whatever the operation's
// error, so the interposed calls put back the operation's own
// (MPI_ERR_TRUNCATE...). begin_completions() before each such system call
// forgets the last call's.
void begin_completions();
bool any_completed_errors();
// The error the operation behind `request` ended with, if the last system call
// of this thread completed it in error (reported: that call passed an error
// to the handler already); else success.
Status completed_error(MPI_Request request);
// Drives `op` (and everything else) to completion: blocking calls. Writes
// `status` unless MPI_STATUS_IGNORE; returns op's error (Error::reported as
// op.error_reported says).
Status run(Operation& op, MPI_Status* status);
// Writes op's result into `status`, MPI_ERROR aside: a blocking call leaves
// it alone, as the system MPI's MPI_Recv does.
void fill_status(const Operation& op, MPI_Status* status);
// At MPI_Finalize: finishes every operation still in flight (ledger::drain).
void drain_operations();

}  // namespace dtmpi::transport
