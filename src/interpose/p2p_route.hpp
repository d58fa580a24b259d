// How a point-to-point buffer travels: straight to the system MPI, or through
// src/transport (shared by the p2p, probe and persistent-request entry points).
#pragma once
#include <mpi.h>

#include "base/result.hpp"
#include "interpose/boundary.hpp"
#include "rma/window.hpp"
#include "runtime/config.hpp"
#include "runtime/buffer_hint.hpp"
#include "type/registry.hpp"
#include "transport/p2p.hpp"
#include "transport/peers.hpp"
#include "transport/stash.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::interpose {

// While dtmpi's windows exist, no call may block inside the system MPI: a
// peer's passive-target epoch on one of this rank's windows (lock, put,
// unlock) needs this rank's progress, and below MPI_THREAD_MULTIPLE there is
// no progress thread (rma/progress.cpp). The blocking point-to-point calls
// then take their non-blocking form and dtmpi's wait, which progresses the
// windows while it tests (requests.cpp: the engine is busy while windows
// exist); MPI_Barrier and the blocking collectives likewise (rma_ops.cpp,
// coll_*.cpp). Found by MPICH's test rma/adlb_mimic1: the target in MPI_Recv,
// the origin in MPI_Win_unlock, for ever.
[[gnu::always_inline]] inline bool blocking_needs_progress() {
  return rma::g_windows.load(std::memory_order_relaxed) != 0;
}
// The same for a blocking collective on `comm`, where every rank must decide
// alike (a blocking and a non-blocking collective do not match): only where
// one of dtmpi's windows has every process of `comm` as a member
// (rma::windows_cover; found by session 27's review: a window on a
// sub-communicator hung every collective on a larger one). A collective on a
// communicator no window covers blocks as it is -- dtmpi's own algorithms
// progress the windows while they wait; the system MPI's do not (a passive-
// target epoch to a rank blocked there waits for it: docs/rma.md). Not at
// all where dtmpi's progress thread serves the windows (MPI_THREAD_MULTIPLE):
// there a window created or freed by another thread during the collective
// could make ranks decide apart, and the thread answers the epochs anyway.
// DTMPI_RMA_COLLECTIVES=all: every blocking collective, on every rank,
// windows or not (the same on every rank; the program's choice where a target
// blocks in a collective on a communicator no window covers).
[[gnu::always_inline]] inline bool collective_needs_progress(MPI_Comm comm) {
  if (runtime::config().rma_collectives_all) return true;
  return blocking_needs_progress() && !rma::progress_thread_serves() && rma::windows_cover(comm);
}

// What a call's fast path (plain_host) learned before it said no, handed on
// so that the rest of the decision asks nothing twice: the type's memo and,
// where plain_host got that far (a predefined type of known size below its
// limit), where the buffer lives.
struct Asked {
  type::Memo memo;
  bool classified;            // `info` is runtime::buffer_info(buf, type)
  runtime::PointerInfo info;  // (only where classified)
};

// True if (buf, count, type) must be staged (GPU memory; host memory with a
// non-contiguous small-block type dtmpi packs better, DTMPI_HOST_STAGING; any
// derived type in the host test mode); fills `b`. False: the system MPI takes
// it as it is.
// kNever: host memory is staged only in the host test mode (the reductions:
// they work on the user's own layout, a packed copy gains nothing).
// `asked`: what plain_host learned of this (buf, count, type), or null.
enum class HostPacking { kWhereBetter, kNever };
// `device_taken`: whether the buffer's consumer takes device memory as it is
// (the system MPI where CUDA-aware; collective_takes_device_memory() for the
// collectives, whose consumer may be dtmpi's own algorithms).
bool must_stage(const void* buf, int count, MPI_Datatype type, transport::UserBuffer& b,
                HostPacking host = HostPacking::kWhereBetter, const Asked* asked = nullptr,
                bool device_taken = transport::mpi_takes_device_memory());
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

// The commonest call, decided inline with one memo lookup: a predefined type
// or one run of bytes like it (type::CacheEntry::run_size; its size known to
// this thread's memo) on host memory, of fewer
// than `max_bytes` bytes: the system MPI takes it as it is. False means "ask
// must_stage / route_receive" (with `asked`), never "stage" (issue 29: a host
// ping-pong pays a few loads, with or without GPUs).
[[gnu::always_inline]] inline bool plain_host(const void* buf, int count, MPI_Datatype type, int64_t max_bytes,
                                              Asked& asked) {
  asked.memo = type::memo(type);
  asked.classified = false;
  // derived (but for one run of bytes, as a predefined type), or a size not learned yet
  if (asked.memo.run_size < 0) return false;
  if (int64_t{count} * asked.memo.run_size >= max_bytes) return false;
  asked.info = runtime::buffer_info(buf, type);
  asked.classified = true;
  return !runtime::on_gpu(asked.info);
}

// plain_host where every answer is in plain data: true only where plain_host
// would say true without calling anything (this thread's memo has the type,
// and buffer_host_without_call). The exported functions' fast paths ask this
// and leave everything else to a separate function: with a call on the way
// they needed a stack frame, ~20 instructions per call (issue 29).
[[gnu::always_inline]] inline bool plain_host_no_call(const void* buf, int count, MPI_Datatype type,
                                                      int64_t max_bytes) {
  const type::registry_detail::CacheEntry* e = type::registry_detail::cached_entry_no_call(type);
  // (INT64_MAX, the sends': no count * size reaches it; a constant where inlined)
  return e && e->run_size >= 0 && (max_bytes == INT64_MAX || int64_t{count} * e->run_size < max_bytes) &&
         runtime::buffer_host_without_call(buf, type);
}

using transport::RecvRoute;
// False: a plain receive the system MPI handles alone. Receives of
// `multi_min` bytes and more may meet a descriptor (transport::kMultiMin for
// point to point; the collectives' pieces from transport::kInPlaceMin).
// `asked`: what plain_host(buf, count, type, multi_min) learned before it
// said no, or null (then route_receive asks it first).
bool route_receive(void* buf, int count, MPI_Datatype type, RecvRoute& r,
                   int64_t multi_min = transport::kMultiMin, const Asked* asked = nullptr);

// Describes any receive buffer (for a message a probe took: it is delivered
// by dtmpi whatever the memory). False if the type cannot be sized.
bool describe_receive(void* buf, int count, MPI_Datatype type, transport::UserBuffer& b);

// A receive of a message a probe took (transport/stash.hpp); `request`
// null: blocking.
Status recv_stashed(void* buf, int count, MPI_Datatype type, MPI_Comm comm, transport::Stashed& e, MPI_Status* status,
                    MPI_Request* request);

}  // namespace dtmpi::interpose
