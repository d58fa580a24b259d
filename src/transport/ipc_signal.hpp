// "The packed bytes are ready": a signal the sender raises on dtmpi's stream
// of `device` after the work queued so far, and a receiving process's stream
// waits for on its own GPU -- no host round trip, so the sender need not wait
// for its pack before telling the receiver. The header is CUDA-free; without
// CUDA there is no signal (transport/ipc_nocuda.cpp). Two forms:
//   counter  a 64-bit word in the sender GPU's memory, shared over CUDA IPC
//            (transport/ipc.hpp) once; each raise queues a stream write of
//            the device's next sequence number (stream order makes
//            "counter >= n" mean "all work before raise n is done"), the
//            waiter queues a stream wait for >= n (CUDA stream memory operations)
//   event    an interprocess CUDA event recorded on the stream (pooled), where
//            stream memory operations are unavailable
// Release returns a pooled event once the peer is done with it.
#pragma once
#include <cstdint>

#include "base/result.hpp"
#include "pack/gpu_pack.hpp"

namespace dtmpi::transport {

struct IpcSignal {
  enum class Kind : uint32_t { kNone = 0, kEvent = 1, kCounter = 2 };
  Kind kind = Kind::kNone;
  unsigned char handle[64] = {};  // the event's handle, or the counter allocation's memory handle
  uint64_t buffer_id = 0;         // counter: the allocation's buffer id (the importer's cache key)
  uint64_t value = 0;             // counter: the sequence number to wait for
  uint64_t gpu = 0;               // the producer's GPU (gpu_identity; 0: unknown)
  void* event = nullptr;          // sender side, kEvent: the cudaEvent_t
  int device = -1;
};
Result<IpcSignal> ipc_signal_raise(int device);
// Raise in two steps, for a sender that tells its receiver before queuing the
// work: reserve fixes the value to wait for, commit queues its write after
// the work queued in between. Commits are queued in reservation order (a
// commit waits for earlier reservations' commits), so every reservation must
// be committed whatever happens in between. Counters only (an event cannot be
// waited for before it is recorded): kErrUnsupported otherwise.
// `n` > 1 reserves n consecutive values (the first in the result; commit
// each, in order, as a copy with its value): one per chunk of a message.
Result<IpcSignal> ipc_signal_reserve(int device, int n = 1);
Status ipc_signal_commit(const IpcSignal& s);
void ipc_signal_release(IpcSignal& s);
// Queued on the receive stream of `device`, before the reads it guards.
// `local`: the signal is this process's own (a message to itself).
Status ipc_signal_wait(int peer, const IpcSignal& s, int device, bool local = false);
// Where a counter signal's word is mapped on `device` (for a KernelGate);
// `local` as for ipc_signal_wait.
Result<const void*> ipc_signal_word(int peer, const IpcSignal& s, int device, bool local = false);
// A 64-bit identity of GPU `device` (a hash of its UUID; 0 if unknown): tells
// whether a peer's signal comes from another GPU.
uint64_t gpu_identity(int device);

// For the batched sends (transport/batched_sends.cpp), CUDA builds: commits
// the reserved ready values first..last of `device`'s counter with one write
// of `last` on `stream` (null: the transfer stream), with the ordering rules
// of ipc_signal_commit.
Status commit_values(int device, uint64_t first, uint64_t last, pack::GpuStream stream = nullptr);

}  // namespace dtmpi::transport
