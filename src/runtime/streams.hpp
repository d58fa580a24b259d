// dtmpi's streams: one per device and lane, and the waits for them. The
// header is CUDA-free (the streams themselves: runtime/cuda_device.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/result.hpp"

namespace dtmpi::runtime {

// dtmpi's four streams per device. Transfers queue their sending work on
// kTransfer (packs, ready signals, the pipelined method's copies); reads of a
// peer's memory (waits for its ready signal, then the unpacks over CUDA IPC)
// go to kReceive, so that a wait for a peer that is late never holds back this
// rank's own packs, which that peer may be waiting for (the two streams would
// otherwise advance in lock step, one message at a time); synchronous calls
// that depend on nothing queued elsewhere (MPI_Pack of device memory, the
// one-message methods, collective staging) use kSync, created with the highest
// priority, so that they neither wait behind the large transfers queued before
// them nor for thread blocks of those to finish. kBatch, always a
// non-blocking stream, runs the batched packs (transport/batched_sends.hpp):
// they are queued after the application's later work on the legacy default
// stream, which they must not wait for (that work may wait for this rank's
// receives, whose senders may wait for these packs); an event orders them
// after the transfer stream's work up to their sends, and the transfer stream
// after them.
enum class Lane : uint8_t { kTransfer = 0, kSync = 1, kReceive = 2, kBatch = 3 };
inline constexpr int kLanes = 4;

// Waits for everything queued on dtmpi's stream of `lane` on `device`.
Status wait_stream(int device, Lane lane = Lane::kTransfer);
// Copies `bytes` between any two memories and waits (`device`: the GPU whose
// stream does it; -1: both host, a memcpy).
Status copy_bytes(void* dst, const void* src, size_t bytes, int device);

// Work a higher layer holds back from the transfer stream of a device and
// queues later (transport/batched_sends.hpp: the batched packs). What waits
// for that stream (wait_stream of kTransfer) or for a marker handed out for
// such work (runtime/markers.hpp) has it queued first, by the function that
// layer registers before it holds anything back. CUDA builds.
using QueueHeldWork = Status (*)(int device);
void set_held_work_queue(QueueHeldWork queue);
// Queues the held work of `device` (-1: of every device); nothing registered: none held.
Status queue_held_work(int device);

}  // namespace dtmpi::runtime
