// How a point-to-point buffer travels: straight to the system MPI, or through
// src/transport (shared by the p2p, probe and persistent-request entry points).
#pragma once
#include <mpi.h>

#include "transport/transfer.hpp"

namespace dtmpi::interpose {

// True if (buf, count, type) must be staged (GPU memory; host memory with a
// non-contiguous small-block type dtmpi packs better, DTMPI_HOST_STAGING; any
// derived type in the host test mode); fills `b`. False: the system MPI takes
// it as it is.
// kNever: host memory is staged only in the host test mode (the reductions:
// they work on the user's own layout, a packed copy gains nothing).
enum class HostPacking { kWhereBetter, kNever };
bool must_stage(const void* buf, int count, MPI_Datatype type, transport::UserBuffer& b,
                HostPacking host = HostPacking::kWhereBetter);
// Whether a buffer of `type` could be staged at all in this process, without
// looking at the buffer: false lets a caller skip all staging work.
bool may_stage(MPI_Datatype type, HostPacking host = HostPacking::kWhereBetter);

struct RecvRoute {
  transport::UserBuffer buffer;
  bool staged = false;  // lands in a staging buffer (else in the user's buffer)
  bool multi = false;   // may meet a multi-message descriptor: a transport::ReceiveOp
};
// False: a plain receive the system MPI handles alone.
bool route_receive(void* buf, int count, MPI_Datatype type, RecvRoute& r);

// Describes any receive buffer (for a message a probe took: it is delivered
// by dtmpi whatever the memory). False if the type cannot be sized.
bool describe_receive(void* buf, int count, MPI_Datatype type, transport::UserBuffer& b);

// Passes `code` to the communicator's error handler and returns it.
int raise(MPI_Comm comm, int code);

}  // namespace dtmpi::interpose
