// Persistent point-to-point requests (MPI_Send_init and its modes,
// MPI_Recv_init, MPI_Start, MPI_Startall) whose buffers dtmpi must serve: GPU
// memory (which a non-CUDA-aware system MPI cannot take), host layouts dtmpi
// packs better, and any receive that may meet a multi-message descriptor or a
// message a probe took. The others are the system MPI's own.
//
// The application's handle is a real persistent request of the system MPI (a
// send of nothing to MPI_PROC_NULL, never started), so every call dtmpi does
// not interpose still takes it and an inactive handle behaves as MPI says
// (Wait/Test return at once with an empty status). MPI_Start starts the
// operation through dtmpi's own MPI_Isend/MPI_Irecv; while it is active the
// Wait/Test family hands the system MPI the operation's request in the handle's
// place (HandleSwap) and puts the handle back, inactive once its operation
// completed. See docs/point-to-point.md.
#pragma once
#include <mpi.h>

#include <vector>

namespace dtmpi::interpose::persistent {

// Whether some dtmpi persistent request is active (started, not completed):
// one relaxed atomic load, the only cost the Wait/Test family pays otherwise.
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
};

// MPI_Request_free / MPI_Request_get_status of a dtmpi persistent handle
// (true: handled, `rc` set).
bool free_handle(MPI_Request* request, int& rc);
bool get_status(MPI_Request request, int* flag, MPI_Status* status, int& rc);

}  // namespace dtmpi::interpose::persistent
