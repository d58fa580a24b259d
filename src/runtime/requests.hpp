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

void track(MPI_Request req, PendingOp op);
bool is_tracked(MPI_Request req);
// The system MPI reported `req` complete with `status` (never null): finish
// the operation (unpack, release). Returns an MPI error code.
int finish_tracked(MPI_Request req, MPI_Status* status);
// The same for the `n` requests of one MPI_Waitall/MPI_Testall/MPI_Waitsome
// (`reqs[i]` as the application passed it, completed with `statuses[i]`;
// MPI_REQUEST_NULL and MPI_ERR_PENDING entries skipped): one-message receives
// into GPU memory are unpacked by one batched launch. Returns the first error.
int finish_tracked_all(const MPI_Request* reqs, MPI_Status* statuses, int n);
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
