// Requests whose completion needs dtmpi's work: a GPU receive staged through a
// host buffer must be unpacked into the device buffer, a staged send must give
// its host buffer back. The application holds the system MPI's own request;
// dtmpi keeps a side table keyed by that handle and finishes the operation
// when any MPI_Wait*/MPI_Test* (or MPI_Request_get_status) reports completion.
// A request the application frees early is detached and finished by the
// progress that runs whenever control enters the library.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/gpu.hpp"
#include "type/registry.hpp"

namespace dtmpi::runtime {

// Work that runs when a request completes (a non-blocking collective's
// unpacking; owns what must live until then).
struct Completion {
  virtual ~Completion() = default;
  virtual int finish() = 0;  // an MPI error code
};

struct PendingOp {
  enum class Kind : uint8_t { kSend, kRecv, kCompletion };
  Kind kind = Kind::kSend;
  type::PlanPtr plan;  // receive: how to unpack
  int count = 0;       // receive: capacity in elements
  void* user = nullptr;
  PointerInfo user_info;
  Staging staging;
  DeviceBuffer device;  // CUDA-aware system MPI: the packed bytes on the GPU
  bool via_device = false;
  std::shared_ptr<Completion> completion;  // kCompletion
  // send: GPU work still reading the application's buffer (a pack queued
  // after the message went out); the request completes once it is done
  GpuMarker reading = nullptr;
};

// Nonzero while any request is tracked: the Wait/Test wrappers' fast check.
extern std::atomic<int64_t> g_tracked;
inline bool any_tracked() { return g_tracked.load(std::memory_order_relaxed) != 0; }

// Tracks `op` under the system MPI's request `req`. A send the system MPI
// completed at once (its handle may be one shared by every such send: Open
// MPI's ompi_request_empty, MPICH's builtin complete request) with no GPU work
// still reading the application's buffer is finished here, not tracked.
void track(MPI_Request req, PendingOp op);

// The tracked ops of the requests one Wait/Test call passes to the system MPI,
// taken out of the table BEFORE the call. The system MPI frees a request
// inside the call that completes it, and under MPI_THREAD_MULTIPLE another
// thread may be handed the same handle value for a new request and track
// that before this thread looks its handle up again: looking up after the call
// finished the other thread's operation with this one's status (issue 20).
// A handle that is not complete cannot be reused, so the ops of the requests
// the call did not complete go back to the table (destructor) unchanged.
class ClaimedOps {
 public:
  ClaimedOps(const MPI_Request* reqs, int n);
  ~ClaimedOps();
  ClaimedOps(const ClaimedOps&) = delete;
  ClaimedOps& operator=(const ClaimedOps&) = delete;
  bool empty() const { return ops_.empty(); }
  // Request reqs[slot] completed with `status` (never null): finish its ops.
  // MPI_ERR_PENDING statuses are skipped. Returns an MPI error code.
  int finish(int slot, MPI_Status* status);
  // The requests reqs[slots[k]] completed with statuses[k], k < n: one-message
  // receives into GPU memory are unpacked by one batched launch. Returns the
  // first error.
  int finish_all(const int* slots, MPI_Status* statuses, int n);

 private:
  struct Entry {
    int slot;
    MPI_Request req;
    PendingOp op;
    bool done = false;
  };
  std::vector<Entry> ops_;
};

// The system MPI reported `req` complete with `status` (never null), and the
// handle is still valid (MPI_Request_get_status): finish its ops now.
int finish_tracked(MPI_Request req, MPI_Status* status);
// MPI_Request_free of a tracked request: keep the real request and finish it
// from progress(). Returns true if `req` was tracked.
bool detach(MPI_Request req);
// Tests detached requests and finishes the completed ones.
void progress();
// True while requests the application freed early are still in flight.
bool any_detached();

// Finishes a receive staged in `op` whose status is `st` (shared with the
// blocking paths): unpacks the elements that arrived.
int finish_receive(PendingOp& op, MPI_Status* st);

}  // namespace dtmpi::runtime
