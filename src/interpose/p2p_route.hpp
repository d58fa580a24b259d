// How a point-to-point buffer travels: straight to the system MPI, or through
// src/transport (shared by the p2p, probe and persistent-request entry points).
#pragma once
#include <mpi.h>

#include "base/result.hpp"
#include "interpose/boundary.hpp"
#include "runtime/buffer_hint.hpp"
#include "type/registry.hpp"
#include "transport/p2p.hpp"
#include "transport/stash.hpp"
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
// The error of a call whose buffer must_stage refused (b.refused: GPU memory
// neither dtmpi nor the system MPI can take), saying why.
Error refusal(const transport::UserBuffer& b);
// Whether a buffer of `type` could be staged at all in this process, without
// looking at the buffer: false lets a caller skip all staging work.
bool may_stage(MPI_Datatype type, HostPacking host = HostPacking::kWhereBetter);
// The host packing rule of receive buffers (point to point and the receive
// sides of collectives): kNever where the system MPI unpacks the senders'
// packed bytes with the receiver's own datatype (runtime::host_receive_direct).
HostPacking receive_packing();

// The commonest call, decided inline with one cache lookup: a predefined type
// (no plan; its size known to this thread's cache) on host memory, of fewer
// than `max_bytes` bytes: the system MPI takes it as it is. False means "ask
// must_stage / route_receive", never "stage" (issue 29: a host ping-pong pays
// a few loads, with or without GPUs).
inline bool plain_host(const void* buf, int count, MPI_Datatype type, int64_t max_bytes) {
  const type::registry_detail::CacheEntry& e = type::registry_detail::cached_entry(type);
  if (e.plan || e.named_size < 0) return false;  // derived, or a size not learned yet
  return int64_t{count} * e.named_size < max_bytes && !runtime::on_gpu(runtime::buffer_info(buf, type));
}

using transport::RecvRoute;
// False: a plain receive the system MPI handles alone. Receives of
// `multi_min` bytes and more may meet a descriptor (transport::kMultiMin for
// point to point; the collectives' pieces from transport::kInPlaceMin).
bool route_receive(void* buf, int count, MPI_Datatype type, RecvRoute& r,
                   int64_t multi_min = transport::kMultiMin);

// Describes any receive buffer (for a message a probe took: it is delivered
// by dtmpi whatever the memory). False if the type cannot be sized.
bool describe_receive(void* buf, int count, MPI_Datatype type, transport::UserBuffer& b);

// A receive of a message a probe took (transport/stash.hpp); `request`
// null: blocking.
Status recv_stashed(void* buf, int count, MPI_Datatype type, MPI_Comm comm, transport::Stashed& e, MPI_Status* status,
                    MPI_Request* request);

}  // namespace dtmpi::interpose
