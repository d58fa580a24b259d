// Batched sends (transport/batched_sends.hpp, DTMPI_BATCH_PACKS), CUDA builds: the packs of the
// device-method sends an application posts before it waits are queued as one
// batch. A halo exchange posts 26 MPI_Isend at once; each queued on its own
// cost a kernel launch (~5 us of host time inside the exchange), a counter
// write (~2 us) and a marker (~1.5 us): bench/results/gpu-trace-halo-*. As a
// batch they cost one launch per 32 packs, one counter write and one flag.
#include "transport/batched_sends.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "pack/gpu_pack.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/cuda_markers.hpp"
#include "runtime/device.hpp"
#include "runtime/stats.hpp"
#include "runtime/streams.hpp"

namespace dtmpi::transport {

using runtime::Counter;
using runtime::DeviceScope;
using runtime::GpuMarker;
using runtime::HostFlag;
using runtime::kMaxDevices;
using runtime::Lane;
using runtime::Marker;
using runtime::PointerInfo;
using runtime::record_into;
using runtime::stream_for;
using runtime::take_marker;

namespace {

using Clock = std::chrono::steady_clock;

struct BatchedPack {
  type::PlanPtr plan;  // kept alive: the application may free its type after MPI_Isend
  int64_t count = 0;
  void* user = nullptr;
  void* dst = nullptr;
  uint64_t value = 0;  // the reserved ready value
  Marker* marker = nullptr;
};

struct Batches {
  std::mutex mu;
  std::condition_variable wake;
  std::vector<BatchedPack> open[kMaxDevices];
  // packs batched and not yet queued; written under `mu`, read without it by
  // flush_packs (every MPI_Wait*/MPI_Test* asks, batching on or off)
  std::atomic<int> open_packs{0};
  Clock::time_point opened;  // when the oldest open pack was batched
  cudaEvent_t sent[kMaxDevices] = {};  // recorded on the transfer stream at each batched send
  cudaEvent_t done[kMaxDevices] = {};  // recorded on the batch stream after each batch
  std::thread helper;
  bool stopping = false;
};

Batches& batches() {
  static auto* b = new Batches;  // never destroyed: the helper may outlive static destruction order
  return *b;
}

// Queues the open batch of `device` (lock held) on the batch stream, after
// the transfer stream's work up to the last batched send (its `sent` event)
// and before the transfer stream's later work. Every value is committed and
// every marker recorded whatever fails, so no receiver and no request waits
// forever; a failed launch shows in the markers (marker_done's error).
Status flush_locked(Batches& b, int device) {
  std::vector<BatchedPack> list;
  list.swap(b.open[device]);
  if (list.empty()) return ok_status();
  b.open_packs -= static_cast<int>(list.size());
  DeviceScope scope(device);
  auto t = stream_for(device, Lane::kTransfer);
  auto s = stream_for(device, Lane::kBatch);
  Status packed = !t ? Status(t.error()) : !s ? Status(s.error()) : ok_status();
  if (packed) packed = DTMPI_CUDA_STATUS(cudaStreamWaitEvent(s.value(), b.sent[device], 0));
  if (packed) {
    std::vector<pack::DevicePiece> pieces;
    pieces.reserve(list.size());
    for (const auto& p : list) pieces.push_back({p.plan.get(), p.count, p.user, p.dst});
    int launches = 0;
    packed = pack::pack_pieces_device(pieces.data(), pieces.size(), device, s.value(), &launches);
    runtime::count(Counter::kBatchLaunches, static_cast<uint64_t>(launches));
    runtime::count(Counter::kBatchedPacks, list.size());
  }
  DTMPI_TRACE("gpu: batched packs queued");
  // values were reserved one after another by one thread: one write of the
  // last commits them all (commit_values checks they follow the committed ones)
  Status committed = ok_status();
  for (size_t i = 1; i < list.size() && committed; ++i)
    if (list[i].value != list[i - 1].value + 1)
      committed = Error{kErrCuda, "batched ready values are not consecutive"};
  if (auto ok = commit_values(device, list.front().value, list.back().value, s ? s.value() : nullptr);
      !ok && committed)
    committed = ok;
  for (auto& p : list) p.marker->failed = !packed || !record_into(p.marker, s.value(), false);
  const HostFlag flag = list.back().marker->failed ? HostFlag{} : runtime::raise_host_flag(device, s.value());
  for (auto& p : list) {
    p.marker->flag = flag;
    p.marker->pending.store(false, std::memory_order_release);
  }
  // the transfer stream's later work (later values' commits) after the batch
  if (s && t) {
    Status ordered = DTMPI_CUDA_STATUS(cudaEventRecord(b.done[device], s.value()));
    if (ordered) ordered = DTMPI_CUDA_STATUS(cudaStreamWaitEvent(t.value(), b.done[device], 0));
    if (!ordered && committed)
      committed = Error{kErrCuda, "ordering the transfer stream after batched packs: " + ordered.error().what};
  }
  if (!packed) {
    DTMPI_LOG(kError, "batched packs failed: %s", packed.error().what.c_str());
    return packed;
  }
  return committed;
}

Status flush_all_locked(Batches& b) {
  Status result = ok_status();
  for (int d = 0; d < kMaxDevices && b.open_packs > 0; ++d)
    if (auto ok = flush_locked(b, d); !ok && result) result = ok;
  return result;
}

// The helper: queues a batch kDelayUs after it was opened unless a wait did.
void helper_loop() {
  Batches& b = batches();
  std::unique_lock lock(b.mu);
  while (!b.stopping) {
    if (b.open_packs == 0) {
      b.wake.wait(lock);
      continue;
    }
    const auto due = b.opened + std::chrono::microseconds(kBatchDelayUs);
    if (Clock::now() < due) {
      b.wake.wait_until(lock, due);
      continue;
    }
    DTMPI_TRACE("gpu: helper queues the batch");
    if (!flush_all_locked(b)) DTMPI_LOG(kError, "queuing batched packs from the helper thread failed");
  }
}

// At MPI_Finalize (release_gpu_resources): the last batch queued, the helper stopped.
void stop_batches() {
  Batches& b = batches();
  {
    std::lock_guard lock(b.mu);
    if (!flush_all_locked(b)) DTMPI_LOG(kError, "queuing batched packs at MPI_Finalize failed");
    b.stopping = true;
    b.wake.notify_all();
  }
  if (b.helper.joinable()) b.helper.join();
  std::lock_guard lock(b.mu);
  b.stopping = false;  // a later MPI session (MPI_Init after MPI_Finalize is not allowed, but tests re-init the runtime)
}

}  // namespace

Result<GpuMarker> pack_later(const type::PlanPtr& plan, int64_t count, const void* user, const PointerInfo& ui,
                             void* dst, const IpcSignal& ready) {
  if (!plan || ready.kind != IpcSignal::Kind::kCounter || ready.device != ui.device || ui.device < 0 ||
      ui.device >= kMaxDevices)
    return Error{kErrUnsupported, "not batchable"};
  // before anything is held back: what waits for the transfer stream or for a
  // pending marker queues the batch first, and MPI_Finalize stops the helper
  // (before the ready counters are freed: registered after them)
  static std::once_flag registered;
  std::call_once(registered, [] {
    runtime::set_held_work_queue(flush_packs);
    runtime::at_gpu_release(stop_batches);
  });
  const int device = ui.device;
  Batches& b = batches();
  std::lock_guard lock(b.mu);
  DeviceScope scope(device);
  auto t = stream_for(device, Lane::kTransfer);
  if (!t) return t.error();
  for (cudaEvent_t* e : {&b.sent[device], &b.done[device]})
    if (!*e) {
      if (Status created = DTMPI_CUDA_STATUS(cudaEventCreateWithFlags(e, cudaEventDisableTiming)); !created) {
        *e = nullptr;
        return created.error();
      }
    }
  // the batch will wait for this: the transfer stream's work so far, and (a
  // blocking stream, DTMPI_GPU_ORDER=legacy) the legacy stream's work before
  // this send, which produced the buffer
  DTMPI_CUDA_CHECK(cudaEventRecord(b.sent[device], t.value()));
  auto m = take_marker(device);
  if (!m) return m.error();
  m.value()->pending.store(true, std::memory_order_release);
  if (!b.helper.joinable() && !b.stopping) b.helper = std::thread(helper_loop);
  if (b.open_packs == 0) {
    b.opened = Clock::now();
    b.wake.notify_one();
  }
  b.open[ui.device].push_back({plan, count, const_cast<void*>(user), dst, ready.value, m.value()});
  DTMPI_TRACE("gpu: pack batched");
  ++b.open_packs;
  // a full launch's worth goes now (a failure shows in its markers)
  if (b.open[ui.device].size() >= static_cast<size_t>(pack::kPiecesPerLaunch) && !flush_locked(b, ui.device)) DTMPI_LOG(kError, "queuing batched packs failed");
  return static_cast<GpuMarker>(m.value());
}

Status flush_packs(int device) {
  Batches& b = batches();
  if (b.open_packs.load(std::memory_order_acquire) == 0) return ok_status();  // the usual case: no lock
  std::lock_guard lock(b.mu);
  if (b.open_packs == 0) return ok_status();
  if (device < 0) return flush_all_locked(b);
  if (device >= kMaxDevices) return ok_status();
  return flush_locked(b, device);
}

}  // namespace dtmpi::transport
