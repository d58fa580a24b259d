// runtime/pointer_kind.hpp in CUDA builds: host memory proven by the process's
// layout first (no driver call), then the driver's pointer query with a range
// cache of the CUDA allocations seen.
#include "runtime/pointer_kind.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "base/cuda_check.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/device.hpp"
#include "runtime/host_ranges.hpp"
#include "runtime/mapped_host.hpp"

namespace dtmpi::runtime {
namespace {

// CUDA allocations seen so far: start -> range. An entry is only trusted
// when the driver reports the same buffer id for the queried pointer, so a
// freed and reused address range can never be misclassified.
struct RangeCache {
  std::shared_mutex mu;
  struct Range {
    uintptr_t end;
    unsigned long long buffer_id;
    PointerInfo info;  // at the range start
  };
  std::map<uintptr_t, Range> ranges;
};

RangeCache& range_cache() {
  static auto* c = new RangeCache;  // never destroyed: classification may run in static destructors
  return *c;
}

std::atomic<uint64_t> g_driver_queries{0};

// Classification through the runtime API alone (no driver entry points).
PointerInfo query_runtime(const void* p) {
  PointerInfo info;
  cudaPointerAttributes a{};
  if (!DTMPI_CUDA_PROBE(cudaPointerGetAttributes(&a, p))) {
    cudaGetLastError();
    return info;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: info.kind = MemKind::kDevice; break;
    case cudaMemoryTypeManaged: info.kind = MemKind::kManaged; break;
    case cudaMemoryTypeHost: info.kind = MemKind::kPinnedHost; break;
    default: return info;  // unregistered host memory
  }
  info.device = a.device;
  if (info.kind == MemKind::kPinnedHost) info.device_ptr = a.devicePointer;
  return info;
}

}  // namespace

uint64_t driver_pointer_queries() { return g_driver_queries.load(std::memory_order_relaxed); }

namespace pointer_kind_detail {
std::atomic<int> g_classify{-1};

PointerInfo pointer_info_slow(const void* p) {
  const bool on = gpu_enabled();  // decided once per process (runtime/gpu.cpp)
  g_classify.store(on ? 1 : 0, std::memory_order_relaxed);
  if (p == nullptr || !on) return PointerInfo{};
  if (provably_host(p)) return PointerInfo{};
  const PointerInfo info = pointer_info_exact(p);
  // host memory the layout did not prove: an ordinary mapping is learned, so
  // that later calls on it need no query (runtime/mapped_host.hpp)
  if (info.kind == MemKind::kHost) note_driver_host(p);
  return info;
}
}  // namespace pointer_kind_detail

PointerInfo pointer_info_exact(const void* p) {
  if (p == nullptr || !gpu_enabled()) return PointerInfo{};
  g_driver_queries.fetch_add(1, std::memory_order_relaxed);
  const DriverCalls& d = driver();
  if (!d.pointer_get_attributes || !d.pointer_get_attribute) return query_runtime(p);
  // One driver call answers "is this CUDA memory, which allocation": it costs
  // 100-150 ns and, unlike cudaPointerGetAttributes, reports non-CUDA memory
  // without an error path.
  const auto addr = reinterpret_cast<uintptr_t>(p);
  unsigned int memtype = 0;
  unsigned long long id = 0;
  int managed = 0;
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* values[] = {&memtype, &id, &managed};
  if (!DTMPI_CU_PROBE(d.pointer_get_attributes(3, which, values, static_cast<CUdeviceptr>(addr))) || memtype == 0)
    return PointerInfo{};  // not CUDA memory: host
  RangeCache& c = range_cache();
  {
    std::shared_lock lock(c.mu);
    auto it = c.ranges.upper_bound(addr);
    if (it != c.ranges.begin()) {
      --it;
      if (addr < it->second.end && it->second.buffer_id == id) {
        PointerInfo info = it->second.info;
        if (info.device_ptr) info.device_ptr = static_cast<char*>(info.device_ptr) + (addr - it->first);
        return info;
      }
    }
  }
  // First sight of this allocation: the rest of what we need, once.
  PointerInfo info = query_runtime(p);
  if (managed) info.kind = MemKind::kManaged;
  CUdeviceptr start = 0;
  size_t size = 0;
  if (DTMPI_CU_PROBE(d.pointer_get_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, static_cast<CUdeviceptr>(addr))) &&
      DTMPI_CU_PROBE(d.pointer_get_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, static_cast<CUdeviceptr>(addr))) &&
      size > 0) {
    PointerInfo at_start = info;
    if (at_start.device_ptr)
      at_start.device_ptr = static_cast<char*>(info.device_ptr) - (addr - static_cast<uintptr_t>(start));
    const auto lo_addr = static_cast<uintptr_t>(start), hi_addr = lo_addr + size;
    std::unique_lock lock(c.mu);
    // drop ranges this allocation overlaps: their memory was freed
    auto it = c.ranges.upper_bound(lo_addr);
    if (it != c.ranges.begin() && std::prev(it)->second.end > lo_addr) --it;
    while (it != c.ranges.end() && it->first < hi_addr) it = c.ranges.erase(it);
    c.ranges[lo_addr] = RangeCache::Range{hi_addr, id, at_start};
  }
  return info;
}

}  // namespace dtmpi::runtime
