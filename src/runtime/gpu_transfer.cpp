// The CUDA pieces of multi-message transfers: pooled device buffers, copies
// with completion markers, and CUDA IPC export/import with caches.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <string>
#include <mutex>
#include <tuple>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "pack/gpu_pack.hpp"
#include "runtime/config.hpp"
#include "runtime/gpu.hpp"
#include "runtime/gpu_internal.hpp"

namespace dtmpi::runtime {

Result<DeviceBuffer> acquire_device_buffer(int device, size_t bytes) {
  DeviceScope scope(device);
  auto b = device_pool(device).acquire(bytes ? bytes : 1);
  if (!b) return b.error();
  return DeviceBuffer{b.value().ptr, b.value().capacity, b.value().cls, device};
}

void release_device_buffer(DeviceBuffer& b) {
  if (!b.ptr) return;
  device_pool(b.device).release(PooledBuffer{b.ptr, b.capacity, b.cls});
  b.ptr = nullptr;
}

int current_device() {
  int d = 0;
  if (!gpu_enabled() || !DTMPI_CUDA_WARN(cudaGetDevice(&d))) return 0;
  return d;
}

namespace {

std::mutex g_markers_mu;
std::vector<Marker*> g_free_markers;

}  // namespace

Result<Marker*> take_marker(int device) {
  Marker* m = nullptr;
  {
    std::lock_guard lock(g_markers_mu);
    if (!g_free_markers.empty()) {
      m = g_free_markers.back();
      g_free_markers.pop_back();
    }
  }
  if (!m) m = new Marker;
  // an event records only on a stream of the device it was created on
  if (m->event && m->device != device) {
    cudaEventDestroy(m->event);
    m->event = nullptr;
  }
  if (!m->event) {
    if (Status created = DTMPI_CUDA_STATUS(cudaEventCreateWithFlags(&m->event, cudaEventDisableTiming)); !created) {
      m->event = nullptr;
      delete m;
      return created.error();
    }
  }
  m->device = device;
  m->polls = 0;
  m->flag = HostFlag{};
  m->failed = false;
  m->pending.store(false, std::memory_order_relaxed);
  return m;
}

Status record_into(Marker* m, cudaStream_t s, bool host_visible) {
  DTMPI_CUDA_CHECK(cudaEventRecord(m->event, s));
  DTMPI_TRACE("gpu: marker event recorded");
  m->flag = host_visible ? raise_host_flag(m->device, s) : HostFlag{};
  return ok_status();
}

namespace {

Result<GpuMarker> record_marker(cudaStream_t s, int device, bool host_visible) {
  auto m = take_marker(device);
  if (!m) return m.error();
  if (auto ok = record_into(m.value(), s, host_visible); !ok) {
    std::lock_guard lock(g_markers_mu);
    g_free_markers.push_back(m.value());
    return ok.error();
  }
  return static_cast<GpuMarker>(m.value());
}

}  // namespace

Result<GpuMarker> copy_async(void* dst, const void* src, size_t bytes, int device) {
  DeviceScope scope(device);
  auto s = stream_for(device);
  if (!s) return s.error();
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.value()));
  return record_marker(s.value(), device, false);
}

Result<GpuMarker> unpack_async(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                               const PointerInfo& ui, KernelGate gate, type::PackedRange range) {
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, Lane::kReceive);
  if (!s) return s.error();
  int64_t offset = 0;
  if (gate.word) {
    DTMPI_TRY(pack::unpack_device(plan, count, packed, user, ui.device, s.value(), pack::Gate{gate.word, gate.value},
                                  range));
  } else if (plan.contiguous_for_count(count, offset)) {
    const int64_t bytes = range.end_in(count * plan.size) - range.first;
    if (bytes > 0)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(user) + offset + range.first,
                                       static_cast<const char*>(packed) + range.first, static_cast<size_t>(bytes),
                                       cudaMemcpyDefault, s.value()));
  } else {
    DTMPI_TRY(pack::unpack_device(plan, count, packed, user, ui.device, s.value(), {}, range));
  }
  DTMPI_TRACE("gpu: unpack launched");
  return record_marker(s.value(), ui.device, true);
}

Result<bool> marker_done(GpuMarker gm) {
  auto* m = static_cast<Marker*>(gm);
  if (m->pending.load(std::memory_order_acquire)) return false;  // its batched pack is not queued yet
  if (m->failed) return Error{kErrCuda, "a batched pack failed to launch"};
  // the flag first; the event now and then, which also reports a fault (after
  // one, the flag would never be written)
  if (m->flag.seq && host_flag_reached(m->device, m->flag)) return true;
  if (m->flag.seq && (++m->polls & 63) != 0) return false;
  const cudaError_t e = cudaEventQuery(m->event);
  if (e == cudaErrorNotReady) return false;  // an answer, not a failure
  if (Status done = cuda_status(e, "cudaEventQuery"); !done) return done.error();
  return true;
}

Result<GpuMarker> mark(int device) {
  DeviceScope scope(device);
  auto s = stream_for(device);
  if (!s) return s.error();
  return record_marker(s.value(), device, true);
}

Status wait_marker(GpuMarker m) {
  if (static_cast<Marker*>(m)->pending.load(std::memory_order_acquire))
    DTMPI_TRY(flush_packs(static_cast<Marker*>(m)->device));
  for (;;) {
    auto done = marker_done(m);
    if (!done) return done.error();
    if (done.value()) return ok_status();
  }
}

void release_marker(GpuMarker m) {
  if (!m) return;
  // a batched pack still to be queued records into it: queue it first
  if (static_cast<Marker*>(m)->pending.load(std::memory_order_acquire) &&
      !flush_packs(static_cast<Marker*>(m)->device))
    DTMPI_LOG(kError, "queuing batched packs failed");
  std::lock_guard lock(g_markers_mu);
  g_free_markers.push_back(static_cast<Marker*>(m));
}

// ---------------------------------------------------------------- CUDA IPC --
namespace {

struct Exported {
  unsigned long long id;
  size_t size;
  cudaIpcMemHandle_t handle;
};

struct Imported {
  const void* base;
};

// Mappings kept open per process (DTMPI_TEST_IPC_CACHE lowers it in tests; at
// least 2: a receive maps the sender's buffer, then its ready counter, before
// it queues the read, and the first must survive the second).
size_t max_imported() {
  const int64_t n = test_hooks().ipc_cache;
  return n > 0 ? static_cast<size_t>(std::max<int64_t>(n, 2)) : 64;
}

struct IpcCaches {
  std::mutex mu;
  std::map<uintptr_t, Exported> exported;  // allocation start -> handle
  std::map<const void*, IpcRegion> pooled;  // pooled buffers by address
  using Key = std::tuple<int, uint64_t, int>;  // peer, buffer id, device
  std::list<std::pair<Key, Imported>> lru;     // most recent first
  std::map<Key, std::list<std::pair<Key, Imported>>::iterator> imported;
};

IpcCaches& ipc() {
  static auto* c = new IpcCaches;
  return *c;
}

}  // namespace

Result<IpcRegion> ipc_export(const void* p, bool pooled) {
  auto& c = ipc();
  if (pooled) {
    std::lock_guard lock(c.mu);
    auto it = c.pooled.find(p);
    if (it != c.pooled.end()) return it->second;
  }
  uintptr_t start = 0;
  size_t size = 0;
  unsigned long long id = 0;
  if (!allocation_of(p, start, size, id)) return Error{kErrUnsupported, "not a CUDA allocation"};
  IpcRegion r;
  r.buffer_id = id;
  r.offset = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) - start);
  std::lock_guard lock(c.mu);
  auto it = c.exported.find(start);
  if (it == c.exported.end() || it->second.id != id) {
    cudaIpcMemHandle_t h;
    // fails for memory that cannot be shared (cudaMallocAsync pools, VMM
    // allocations without a shareable handle type): callers copy to a pool buffer
    DTMPI_CUDA_CHECK(cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(start)));
    it = c.exported.insert_or_assign(start, Exported{id, size, h}).first;
  }
  static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(r.handle));
  std::memcpy(r.handle, &it->second.handle, sizeof(r.handle));
  if (pooled) c.pooled[p] = r;
  return r;
}

Result<const void*> ipc_open(int peer, const IpcRegion& r, int device, bool local) {
  auto& c = ipc();
  const IpcCaches::Key key{peer, r.buffer_id, device};
  std::lock_guard lock(c.mu);
  if (local) {
    for (const auto& [start, e] : c.exported)
      if (e.id == r.buffer_id) return reinterpret_cast<const char*>(start) + r.offset;
    return Error{kErrUnsupported, "a region this process never exported"};
  }
  auto it = c.imported.find(key);
  if (it != c.imported.end()) {
    c.lru.splice(c.lru.begin(), c.lru, it->second);
    return static_cast<const char*>(it->second->second.base) + r.offset;
  }
  DeviceScope scope(device);
  cudaIpcMemHandle_t h;
  std::memcpy(&h, r.handle, sizeof(h));
  void* base = nullptr;
  DTMPI_CUDA_CHECK(cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess));
  c.lru.emplace_front(key, Imported{base});
  c.imported[key] = c.lru.begin();
  // Closing a mapping that a queued kernel still reads would fault it: dtmpi
  // queues every read of a peer's memory (unpacks, waits for and gated polls
  // of a ready counter) on the receive stream of the reading device, so that
  // stream is drained first. It drains without this thread's help: each
  // queued wait is for a peer's write that was queued before the wait was
  // (send.cpp, may_announce_early), behind nothing but the peer's own packs.
  const size_t keep = max_imported();
  if (c.lru.size() > keep) {
    std::vector<int> devices;  // of the mappings about to be closed
    auto it = c.lru.rbegin();
    for (size_t k = c.lru.size() - keep; k > 0; --k, ++it)
      if (std::find(devices.begin(), devices.end(), std::get<2>(it->first)) == devices.end())
        devices.push_back(std::get<2>(it->first));
    for (int d : devices)
      if (auto ok = wait_stream(d, Lane::kReceive); !ok)
        DTMPI_LOG(kWarn, "draining the stream before closing an IPC mapping: %s", ok.error().what.c_str());
  }
  while (c.lru.size() > keep) {  // the peer may have freed these
    auto& victim = c.lru.back();
    DeviceScope vscope(std::get<2>(victim.first));
    DTMPI_CUDA_WARN(cudaIpcCloseMemHandle(const_cast<void*>(victim.second.base)));
    c.imported.erase(victim.first);
    c.lru.pop_back();
  }
  return static_cast<const char*>(base) + r.offset;
}

void ipc_close_all() {
  if (!gpu_enabled()) return;
  auto& c = ipc();
  std::lock_guard lock(c.mu);
  for (auto& [key, imp] : c.lru) {
    DeviceScope scope(std::get<2>(key));
    DTMPI_CUDA_WARN(cudaIpcCloseMemHandle(const_cast<void*>(imp.base)));
  }
  c.lru.clear();
  c.imported.clear();
  c.exported.clear();
  c.pooled.clear();
}

Status pack_to_device_async(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                            void* dst, type::PackedRange range) {
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device);
  if (!s) return s.error();
  DTMPI_TRACE("gpu: pack launching");
  int64_t offset = 0;
  if (plan.contiguous_for_count(count, offset)) {
    const int64_t bytes = range.end_in(count * plan.size) - range.first;
    if (bytes > 0)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + range.first,
                                       static_cast<const char*>(user) + offset + range.first,
                                       static_cast<size_t>(bytes), cudaMemcpyDefault, s.value()));
    return ok_status();
  }
  return pack::pack_device(plan, count, user, dst, ui.device, s.value(), range);
}

Result<DeviceBuffer> pack_to_device_buffer(const type::PackPlan& plan, int64_t count, const void* user,
                                           const PointerInfo& ui) {
  auto dev = acquire_device_buffer(ui.device, static_cast<size_t>(count * plan.size));
  if (!dev) return dev.error();
  auto ok = pack_to_device_async(plan, count, user, ui, dev.value().ptr);
  if (ok) ok = wait_stream(ui.device);
  if (!ok) {
    release_device_buffer(dev.value());
    return ok.error();
  }
  return dev;
}

Status copy_bytes(void* dst, const void* src, size_t bytes, int device) {
  if (bytes == 0) return ok_status();
  if (device < 0) {
    std::memcpy(dst, src, bytes);
    return ok_status();
  }
  DeviceScope scope(device);
  auto s = stream_for(device, Lane::kSync);
  if (!s) return s.error();
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.value()));
  return finish(device, s.value());
}

Status wait_stream(int device, Lane lane) {
  if (lane == Lane::kTransfer) DTMPI_TRY(flush_packs(device));  // what waits for the stream waits for those too
  DeviceScope scope(device);
  auto s = stream_for(device, lane);
  if (!s) return s.error();
  return finish(device, s.value());
}

}  // namespace dtmpi::runtime
