// Persistent point-to-point requests (MPI_Send_init and its modes,
// MPI_Recv_init, MPI_Start, MPI_Startall) whose buffers dtmpi serves: GPU
// memory (which a non-CUDA-aware system MPI cannot take), host layouts dtmpi
// packs better, and any receive that may meet a multi-message descriptor or a
// message a probe took. interpose/persistent.cpp decides which; the others
// are the system MPI's own.
//
// The application's handle is a real persistent request of the system MPI (a
// send of nothing to MPI_PROC_NULL, never started), so every call dtmpi does
// not interpose still takes it and an inactive handle behaves as MPI says
// (Wait/Test return at once with an empty status). Start runs the operation
// through the protocol's entry (transport/p2p.hpp) as decided at init; while it
// is active the Wait/Test family hands the system MPI the operation's request
// in the handle's place (HandleSwap) and puts the handle back, inactive once
// its operation completed. The request lives in the ledger under its handle.
// See docs/point-to-point.md.
#pragma once
#include <mpi.h>

#include <vector>

#include "base/result.hpp"
#include "transport/p2p.hpp"

namespace dtmpi::transport {

struct PersistentRequest {
  bool is_send = true;
  SendMode mode = SendMode::kStandard;
  // a send: the buffer as must_stage described it; a receive: its route
  // (`routed`; else the system MPI receives it) and, for a message a probe
  // took, the buffer as any message describes it (`describable`)
  UserBuffer send_buffer;
  RecvRoute route;
  bool routed = false;
  UserBuffer stash_buffer;
  bool describable = false;
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool own_type = false;  // a duplicate of the application's type, which it may free before this request
  int peer = 0, tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request inner = MPI_REQUEST_NULL;  // the running operation's request while active
  bool active = false;
};

namespace persistent {

// Registers `p` behind a new handle in `*request` (the type duplicated so the
// application may free its own).
Status create(std::shared_ptr<PersistentRequest> p, MPI_Request* request);
// MPI_Start of dtmpi's persistent handle `*handle`, whose request is `p`.
Status start(PersistentRequest& p, MPI_Request* handle);

// Whether some dtmpi persistent request is active (started, not completed).
bool any_active();

// For the duration of one Wait/Test call: swaps each active dtmpi persistent
// handle in `reqs[0..n)` for its operation's request, and back at the end.
// A slot the call set to MPI_REQUEST_NULL completed its operation: the
// handle returns there, inactive.
class HandleSwap {
 public:
  HandleSwap(MPI_Request* reqs, int n);
  ~HandleSwap();
  HandleSwap(const HandleSwap&) = delete;
  HandleSwap& operator=(const HandleSwap&) = delete;

 private:
  MPI_Request* reqs_;
  std::vector<int> swapped_;  // positions
  std::vector<MPI_Request> handles_;
  std::vector<std::shared_ptr<PersistentRequest>> requests_;
};

// MPI_Request_free / MPI_Cancel of a dtmpi persistent handle (true:
// handled, `result` set: the system MPI's calls', reported). An active one is
// freed as MPI says: its operation completes on its own (the ledger keeps
// and finishes what it tracks).
bool free_handle(MPI_Request* request, Status& result);
bool cancel(MPI_Request request, Status& result);
// The request that stands for an active dtmpi persistent handle in calls
// that look at it without completing it (MPI_Request_get_status); false if
// `request` is not one.
bool active_operation(MPI_Request request, MPI_Request& operation);

}  // namespace persistent
}  // namespace dtmpi::transport
