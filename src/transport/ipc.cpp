// CUDA IPC export and import with their caches (transport/ipc.hpp), CUDA builds.
#include "transport/ipc.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "runtime/config.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/device.hpp"
#include "runtime/streams.hpp"

namespace dtmpi::transport {

using runtime::DeviceScope;

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
  const int64_t n = runtime::test_hooks().ipc_cache;
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
  if (!runtime::allocation_of(p, start, size, id)) return Error{kErrUnsupported, "not a CUDA allocation"};
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
      if (auto ok = runtime::wait_stream(d, runtime::Lane::kReceive); !ok)
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
  if (!runtime::gpu_enabled()) return;
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


}  // namespace dtmpi::transport
