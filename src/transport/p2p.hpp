// The point-to-point protocol's one entry: every send and receive dtmpi
// serves (a buffer the system MPI cannot take as it is: GPU memory, host
// layouts dtmpi packs better, receives that may meet a multi-message
// descriptor) goes through send() / receive() / receive_stashed(), whatever
// the method, and completes through the request ledger (transport/ledger.hpp)
// or the engine (transport/engine.hpp). src/interpose decides whether dtmpi
// serves a call and turns the Status into the MPI error the call returns.
//
//   one message   packed bytes on the application's own (communicator, peer,
//                 tag): oneshot / staged through pinned host memory, or a
//                 packed device buffer for a CUDA-aware system MPI
//   multi-message a descriptor on that envelope, the rest on dtmpi's private
//                 communicator: pipelined chunks, or CUDA IPC (send.cpp, receive.cpp)
// See docs/point-to-point.md.
#pragma once
#include <mpi.h>

#include "base/result.hpp"
#include "transport/stash.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::transport {

// Ready mode is a hint an implementation may treat as standard mode.
enum class SendMode : uint8_t { kStandard, kSynchronous, kBuffered };

// Sends `b` by the method that applies; `request` null: blocking.
Status send(SendMode mode, const UserBuffer& b, int dest, int tag, MPI_Comm comm, MPI_Request* request);

// How a receive buffer travels (interpose::route_receive decides).
struct RecvRoute {
  UserBuffer buffer;
  bool staged = false;  // lands in a staging buffer (else in the user's buffer)
  bool multi = false;   // may meet a multi-message descriptor: a ReceiveOp
};

// Where a receive's message comes from: (source, tag) on the communicator, or
// a message a matched probe returned (one-message receives only).
struct Arrival {
  int source = MPI_ANY_SOURCE, tag = MPI_ANY_TAG;
  MPI_Message* message = nullptr;
};

// Receives into `r`; `request` null: blocking (`status` filled as the system
// MPI's receive would), else the request the application waits for.
Status receive(const RecvRoute& r, MPI_Comm comm, const Arrival& from, MPI_Status* status, MPI_Request* request);

// A receive into `b` of a message a probe took (transport/stash.hpp).
Status receive_stashed(const UserBuffer& b, MPI_Comm comm, Stashed& e, MPI_Status* status, MPI_Request* request);

}  // namespace dtmpi::transport
