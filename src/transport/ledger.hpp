// The request ledger: everything dtmpi owns behind a handle the application
// holds, in one table under one lock, with one "is there work" counter and one
// progress call for the MPI_Wait*/MPI_Test* family.
//
// Entries, by the handle they hang on:
//   tracked     a system MPI request whose completion needs dtmpi's work: a
//               staged receive to unpack, a send's staging buffer to return,
//               GPU work still reading a send buffer, a non-blocking
//               collective's unpack (Completion)
//   persistent  a dtmpi persistent request (the application's handle is a
//               never-started system persistent request; transport/persistent.hpp)
//   matched     a message a matched probe handed out (MPI_Message;
//               transport/matched.hpp)
// Requests the application freed early (MPI_Request_free) are kept, detached,
// until progress finds them complete. The probe stash (transport/stash.hpp)
// and the engine's operations in flight (transport/engine.hpp) count into the
// same work counter.
//
// Handles are the system MPI's and are reused at once: whoever completes a
// request takes its entries out of the ledger BEFORE the system call that may
// free it (ClaimedOps), see issue 20.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "base/result.hpp"
#include "runtime/buffers.hpp"
#include "runtime/markers.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/registry.hpp"

namespace dtmpi::transport {

struct PersistentRequest;  // transport/persistent.hpp
struct MatchedMessage;     // transport/matched.hpp

// Work that runs when a request completes (a non-blocking collective's
// unpacking; owns what must live until then).
struct Completion {
  virtual ~Completion() = default;
  virtual Status finish() = 0;
};

// dtmpi's work on a system MPI request.
struct PendingOp {
  enum class Kind : uint8_t { kSend, kRecv, kCompletion };
  Kind kind = Kind::kSend;
  type::PlanPtr plan;  // receive: how to unpack
  int count = 0;       // receive: capacity in elements
  void* user = nullptr;
  runtime::PointerInfo user_info;
  runtime::Staging staging;
  runtime::DeviceBuffer device;  // CUDA-aware system MPI: the packed bytes on the GPU
  bool via_device = false;
  std::shared_ptr<Completion> completion;  // kCompletion
  // send: GPU work still reading the application's buffer (a pack queued
  // after the message went out); the request completes once it is done
  runtime::GpuMarker reading = nullptr;
};

namespace ledger {

// A handle as the ledger's key: MPI_Request and MPI_Message are pointers in
// Open MPI and integers in MPICH.
template <class Handle>
uintptr_t key_of(Handle h) {
  if constexpr (std::is_pointer_v<Handle>)
    return reinterpret_cast<uintptr_t>(h);
  else
    return static_cast<uintptr_t>(static_cast<std::make_unsigned_t<Handle>>(h));
}

// The one "is there work" counter: entries of the table, detached requests,
// stashed messages, engine operations in flight and live generalized
// requests. Zero: every Wait/Test call is a pass-through.
extern std::atomic<int64_t> g_work;
inline bool idle() { return g_work.load(std::memory_order_relaxed) == 0; }
inline void add_work(int64_t n = 1) { g_work.fetch_add(n, std::memory_order_relaxed); }
inline void remove_work(int64_t n = 1) { g_work.fetch_sub(n, std::memory_order_relaxed); }

// The one progress call of the Wait/Test family and of blocking calls: queues
// batched packs, steps the engine's operations, finishes detached requests.
void progress();
// At MPI_Finalize: everything in flight runs to its end (or is given up on).
void drain();

// --- tracked requests ------------------------------------------------------

// Nonzero while any tracked op exists (the finer check of the Wait/Test paths).
bool any_tracked();
// Tracks `op` under the system MPI's request `req`. A send the system MPI
// completed at once (its handle may be one shared by every such send: Open
// MPI's ompi_request_empty, MPICH's builtin complete request) with no GPU work
// still reading the application's buffer is finished here, not tracked.
void track(MPI_Request req, PendingOp op);

// The tracked ops of the requests one Wait/Test call passes to the system MPI,
// taken out of the ledger BEFORE the call (see the file comment). The ops of
// the requests the call did not complete go back (destructor) unchanged.
class ClaimedOps {
 public:
  ClaimedOps(const MPI_Request* reqs, int n);
  ~ClaimedOps();
  ClaimedOps(const ClaimedOps&) = delete;
  ClaimedOps& operator=(const ClaimedOps&) = delete;
  bool empty() const { return ops_.empty(); }
  // Request reqs[slot] completed with `status` (never null): finish its ops.
  // MPI_ERR_PENDING statuses are skipped.
  Status finish(int slot, MPI_Status* status);
  // Slots 0..n) all completed (statuses[i] for slot i): a Waitall/Testall.
  Status finish_first(int n, MPI_Status* statuses);
  // The requests reqs[slots[k]] completed with statuses[k], k < n: one-message
  // receives into GPU memory are unpacked by one batched launch. Returns the
  // first error (the others are logged).
  Status finish_all(const int* slots, MPI_Status* statuses, int n);

 private:
  struct Entry {
    int slot;
    MPI_Request req;
    PendingOp op;
    bool done = false;
  };
  std::vector<Entry> ops_;
};

// --- persistent requests and matched messages -------------------------------
// Stored by the application's handle; the modules that own them
// (transport/persistent.cpp, transport/matched.cpp) say what they mean.
void put_persistent(MPI_Request handle, std::shared_ptr<PersistentRequest> p);
std::shared_ptr<PersistentRequest> find_persistent(MPI_Request handle);
std::shared_ptr<PersistentRequest> take_persistent(MPI_Request handle);
bool any_persistent();
void put_matched(MPI_Message m, std::shared_ptr<MatchedMessage> e);
std::shared_ptr<MatchedMessage> take_matched(MPI_Message m);
bool any_matched();

// The system MPI reported `req` complete with `status` (never null), and the
// handle is still valid (MPI_Request_get_status): finish its ops now.
Status finish_tracked(MPI_Request req, MPI_Status* status);
// MPI_Request_free of a tracked request: keep the real request and finish it
// from progress(). Returns true if `req` was tracked.
bool detach(MPI_Request req);

}  // namespace ledger

// Finishes a one-message receive staged in `op` whose status is `st` (shared
// with the blocking paths): unpacks the bytes that arrived.
Status finish_receive(PendingOp& op, MPI_Status* st);

}  // namespace dtmpi::transport
