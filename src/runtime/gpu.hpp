// GPU side of the runtime: MPI_Pack/MPI_Unpack when either buffer is GPU
// memory (where a pointer lives: runtime/pointer_kind.hpp). The header is
// CUDA-free; in a build without CUDA (or at run time without a driver or device, or with
// DTMPI_CUDA=off) gpu_enabled() is false and every pointer is host memory.
#pragma once
#include <cstdint>
#include <string>

#include "base/result.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/plan.hpp"
#include "type/registry.hpp"

namespace dtmpi::runtime {

bool gpu_enabled();

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
// non-blocking stream, runs the batched packs (pack_later): they are queued
// after the application's later work on the legacy default stream, which
// they must not wait for (that work may wait for this rank's receives, whose
// senders may wait for these packs); an event orders them after the transfer
// stream's work up to their sends, and the transfer stream after them.
enum class Lane : uint8_t { kTransfer = 0, kSync = 1, kReceive = 2, kBatch = 3 };
inline constexpr int kLanes = 4;

// Synchronous pack/unpack of `count` elements where at least one buffer is on
// the GPU: kernels straight into/out of device or mapped pinned memory, staged
// through pooled buffers otherwise. kTransfer where the call must come after
// transfer work queued before it.
Status gpu_pack(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                void* packed, const PointerInfo& pi, Lane lane = Lane::kSync);
Status gpu_unpack(const type::PackPlan& plan, int64_t count, const void* packed,
                  const PointerInfo& pi, void* user, const PointerInfo& ui, Lane lane = Lane::kSync);

// DTMPI_PACK_ASYNC: a pack or unpack between device memory `a` and device
// memory `b` of one GPU may return once queued -- on the legacy default
// stream, so the application's later work on it or on any blocking stream,
// and every dtmpi stream but the batch lane (blocking streams under
// DTMPI_GPU_ORDER=legacy, which it requires), run after it.
bool may_queue_pack(const PointerInfo& a, const PointerInfo& b);
// Whether gpu_pack/gpu_unpack move `count` elements of `plan` between device
// and pinned host memory by one copy-engine copy (one block, or rows of at
// least 16 bytes at a constant pitch) instead of a kernel.
bool copy_engine_layout(const type::PackPlan& plan, int64_t count);
Status gpu_pack_queued(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                       void* packed);
Status gpu_unpack_queued(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                         const PointerInfo& ui);

// Host buffers for staging GPU data through the system MPI: pinned and
// mapped (GPU kernels write them directly) when a GPU is in use, plain heap
// memory otherwise (the host-memory test mode of the transfer paths).
struct Staging {
  void* ptr = nullptr;
  size_t capacity = 0;
  int cls = -1;
  bool pinned = false;
};
Result<Staging> acquire_staging(size_t bytes);
void release_staging(Staging& s);

// Packs `count` elements from `user` (any memory) into host `staging`.
// `via_device`: pack on the GPU into device memory first, then one DMA copy
// (the staged method); else the kernel writes the mapped host buffer (one-shot).
Status stage_out(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                 const Staging& staging, bool via_device);
// Unpacks `count` elements from host `staging` into `user` (any memory).
Status stage_in(const type::PackPlan& plan, int64_t count, const Staging& staging, void* user,
                const PointerInfo& ui, bool via_device);

// --- Messages that end inside an element ------------------------------------
// MPI allows a message shorter than the receive, also one that ends inside an
// element: the received prefix of the typemap is filled, and MPI_Get_elements
// counts its basic elements. These unpack the first `bytes` of a packed
// stream: the whole elements as stage_in / gpu_unpack do, then the prefix of
// the next one (CPU: pack::unpack_host_prefix; GPU memory: that byte range of
// the element's packed stream, by the GPU packer). src/runtime/unpack_bytes.cpp.
Status stage_in_bytes(const type::PackPlan& plan, int64_t bytes, const Staging& staging, void* user,
                      const PointerInfo& ui, bool via_device);
// `packed` in memory `pi`; `lane`: where work on it was queued before (waited for first).
Status gpu_unpack_bytes(const type::PackPlan& plan, int64_t bytes, const void* packed, const PointerInfo& pi,
                        void* user, const PointerInfo& ui, Lane lane = Lane::kSync);

// --- Many pieces at once (the collectives) ---------------------------------

// One piece of a collective's buffer: `count` elements of `plan` at `user`
// (where MPI's element 0 is), packed at byte `offset` of the packed buffer.
struct PieceRef {
  const type::PackPlan* plan = nullptr;
  int64_t count = 0;
  void* user = nullptr;
  int64_t offset = 0;
};
// Packs every piece (all user buffers in memory like `ui`) into `packed`
// (memory `pi`, `total` bytes), with one GPU kernel launch for many pieces and
// one wait; host pieces are packed by the CPU.
Status pack_pieces(const PieceRef* pieces, size_t n, const PointerInfo& ui, void* packed, const PointerInfo& pi,
                   int64_t total);
Status unpack_pieces(const PieceRef* pieces, size_t n, const void* packed, const PointerInfo& pi,
                     const PointerInfo& ui, int64_t total);
// The same into/out of a host staging buffer; `via_device`: pack on the GPU
// into device memory, then one DMA copy (else kernels write mapped memory).
Status stage_out_pieces(const PieceRef* pieces, size_t n, const PointerInfo& ui, const Staging& staging,
                        int64_t total, bool via_device);
Status stage_in_pieces(const PieceRef* pieces, size_t n, const Staging& staging, const PointerInfo& ui,
                       int64_t total, bool via_device);

// Single-message receives completed together (one MPI_Waitall): `count`
// elements of `plan` from the mapped pinned staging buffer `packed` into GPU
// memory `user` (ui). unpack_received unpacks them all with one batched
// kernel launch per device (per 32 strided pieces) and one wait, instead of a
// launch and a wait each.
struct ReceivedPiece {
  const type::PackPlan* plan = nullptr;
  int64_t count = 0;
  const void* packed = nullptr;
  void* user = nullptr;
  PointerInfo ui;
};
Status unpack_received(const ReceivedPiece* pieces, size_t n);

// --- Pieces of the multi-message transfers (src/transport) -----------------

// A pooled device buffer on `device`.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t capacity = 0;
  int cls = -1;
  int device = -1;
};
Result<DeviceBuffer> acquire_device_buffer(int device, size_t bytes);
void release_device_buffer(DeviceBuffer& b);

// The device the calling thread uses (0 without CUDA).
int current_device();

// A copy queued on dtmpi's stream of `device` (any direction, UVA pointers),
// and a marker that tells when it is done. Markers are pooled CUDA events.
using GpuMarker = void*;
Result<GpuMarker> copy_async(void* dst, const void* src, size_t bytes, int device);
// A wait the unpack kernel does itself (pack::Gate): until the word at
// `word` (another GPU's ready counter, mapped here) holds at least `value`.
struct KernelGate {
  const void* word = nullptr;
  uint64_t value = 0;
};
// Queues the unpack of `count` elements from device-accessible `packed` (a
// peer's buffer mapped over CUDA IPC) into GPU memory `user` on dtmpi's
// receive stream of ui.device, and a marker after it. With a gate the unpack is a
// kernel even for contiguous data. `range`: only those bytes of the packed
// stream (`packed` is where the whole stream starts): one chunk of a message.
Result<GpuMarker> unpack_async(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                               const PointerInfo& ui, KernelGate gate = {}, type::PackedRange range = {});
// A marker after the work queued so far on dtmpi's stream of `device`.
Result<GpuMarker> mark(int device);
// True once the work before `m` is done; an error (a fault) is returned as such.
Result<bool> marker_done(GpuMarker m);
// Waits (spinning) until the work before `m` is done.
Status wait_marker(GpuMarker m);
void release_marker(GpuMarker m);

// CUDA IPC. A region of one process's device allocation that a process on the
// same node can map: the allocation's handle, its buffer id (unique per
// allocation for the life of the exporting process: the importer's cache key)
// and where the region starts in it.
struct IpcRegion {
  unsigned char handle[64] = {};
  uint64_t buffer_id = 0;
  int64_t offset = 0;
};
// Exports the allocation holding device pointer `p` (cached per allocation;
// `pooled`: p is a pooled buffer, which lives until ipc_close_all, so the
// cache is consulted by address before asking the driver).
Result<IpcRegion> ipc_export(const void* p, bool pooled = false);
// Maps `r` exported by process `peer` into `device` and returns the region's
// address there. Mappings are cached per (peer, allocation) and the least
// recently used are closed beyond a bound. `local`: the region is this
// process's own (a message to itself: CUDA cannot open its own handles), so
// its address is looked up among what this process exported.
Result<const void*> ipc_open(int peer, const IpcRegion& r, int device, bool local = false);
void ipc_close_all();

// "The packed bytes are ready": a signal the sender raises on dtmpi's stream
// of `device` after the work queued so far, and a receiving process's stream
// waits for on its own GPU -- no host round trip, so the sender need not wait
// for its pack before telling the receiver. Two forms:
//   counter  a 64-bit word in the sender GPU's memory, shared over CUDA IPC
//            once; each raise queues a stream write of the device's next
//            sequence number (stream order makes "counter >= n" mean "all
//            work before raise n is done"), the waiter queues a stream wait
//            for >= n (CUDA stream memory operations)
//   event    an interprocess CUDA event recorded on the stream (pooled), where
//            stream memory operations are unavailable
// Release returns a pooled event once the peer is done with it.
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


// Queues the pack of `count` elements of `user` (on GPU `ui.device`) into
// device memory `dst` on dtmpi's stream, without waiting for it (`range`: only
// those bytes of the packed stream that starts at `dst`).
Status pack_to_device_async(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                            void* dst, type::PackedRange range = {});
// Batched sends (DTMPI_BATCH_PACKS): the pack of `count` elements of `user`
// (GPU ui.device) into device memory `dst`, followed by the write of the
// reserved ready value `ready` (ipc_signal_reserve), is not queued now but
// added to the device's open batch; flush_packs queues the batch: one kernel
// launch for up to 32 packs (pack::pack_pieces_device) and one counter write
// for all their values. The returned marker reads as not done until then.
// Flushed by every MPI_Wait*/MPI_Test* (runtime::progress), before anything
// waits for or commits on the transfer stream (wait_stream, ipc_signal_commit,
// wait_marker and release_marker of a pending marker), at MPI_Finalize, and,
// whatever the application does next (it may block in a call dtmpi does not
// see while a peer waits for these bytes), by a helper thread at most
// kBatchDelayUs after the batch was opened -- the thread makes CUDA calls
// only. Values must be reserved and batched by one thread (may_announce_early
// excludes MPI_THREAD_MULTIPLE). kErrUnsupported: nothing batched, pack now.
inline constexpr int kBatchDelayUs = 200;
Result<GpuMarker> pack_later(const type::PlanPtr& plan, int64_t count, const void* user, const PointerInfo& ui,
                             void* dst, const IpcSignal& ready);
// Queues the open batch of `device` (-1: of every device).
Status flush_packs(int device = -1);

// Packs `count` elements of `user` (on a GPU) into a new pooled device buffer
// on that GPU and waits for it.
Result<DeviceBuffer> pack_to_device_buffer(const type::PackPlan& plan, int64_t count, const void* user,
                                           const PointerInfo& ui);
// Copies `bytes` between any two memories and waits (`device`: the GPU whose
// stream does it; -1: both host, a memcpy).
Status copy_bytes(void* dst, const void* src, size_t bytes, int device);
// Waits for everything queued on dtmpi's stream of `lane` on `device`.
Status wait_stream(int device, Lane lane = Lane::kTransfer);

// Pool counters (allocations from CUDA, reuses, bytes held) as one line.
std::string gpu_pool_stats();
// Returns pooled buffers and streams to CUDA (at MPI_Finalize).
void release_gpu_resources();

}  // namespace dtmpi::runtime
