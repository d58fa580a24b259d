// The device context (CUDA builds): the driver's entry points, per-device
// streams with their host-visible flags, the pools, and their release
// (runtime/device.hpp, runtime/cuda_device.hpp; pointer classification:
// runtime/pointer_kind.cpp).
#include "runtime/device.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/config.hpp"
#include "runtime/cuda_device.hpp"

namespace dtmpi::runtime {
namespace {

struct Gpu {
  bool enabled = false;
  int ndevices = 0;
  DriverCalls driver;

  std::mutex mu;  // guards lazy creation below
  // per device and lane (runtime/streams.hpp: transfers, synchronous calls)
  cudaStream_t streams[kMaxDevices][kLanes] = {};
  volatile uint32_t* done_flag[kMaxDevices][kLanes] = {};  // mapped pinned word per stream
  CUdeviceptr done_flag_dev[kMaxDevices][kLanes] = {};
  uint32_t done_seq[kMaxDevices][kLanes] = {};
  std::mutex done_mu[kMaxDevices][kLanes];  // a sequence number is taken and its write queued under it
  bool spin_ok[kMaxDevices][kLanes] = {};
  std::unique_ptr<BufferPool> device_pools[kMaxDevices];
  std::unique_ptr<BufferPool> pinned_pool;
  std::vector<void (*)()> release_hooks;  // at_gpu_release, guarded by mu
};

Gpu& gpu() {
  static Gpu* g = [] {
    auto* s = new Gpu;  // never destroyed: CUDA may be torn down before static destructors
    if (config().cuda == "off") return s;
    int n = 0;
    if (!DTMPI_CUDA_PROBE(cudaGetDeviceCount(&n)) || n == 0) {
      return s;
    }
    s->ndevices = n < kMaxDevices ? n : kMaxDevices;
    s->enabled = true;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib) {
      // the versioned name first: cuda.h maps the plain names to it
      auto sym = [lib](const char* v2, const char* plain) {
        void* f = v2 ? dlsym(lib, v2) : nullptr;
        return f ? f : dlsym(lib, plain);
      };
      DriverCalls& d = s->driver;
      d.pointer_get_attributes = reinterpret_cast<decltype(d.pointer_get_attributes)>(sym(nullptr, "cuPointerGetAttributes"));
      d.pointer_get_attribute = reinterpret_cast<decltype(d.pointer_get_attribute)>(sym(nullptr, "cuPointerGetAttribute"));
      d.write_value32 = reinterpret_cast<decltype(d.write_value32)>(sym("cuStreamWriteValue32_v2", "cuStreamWriteValue32"));
      d.write_value64 = reinterpret_cast<decltype(d.write_value64)>(sym("cuStreamWriteValue64_v2", "cuStreamWriteValue64"));
      d.wait_value64 = reinterpret_cast<decltype(d.wait_value64)>(sym("cuStreamWaitValue64_v2", "cuStreamWaitValue64"));
      d.device_get = reinterpret_cast<decltype(d.device_get)>(sym(nullptr, "cuDeviceGet"));
      d.device_get_attribute = reinterpret_cast<decltype(d.device_get_attribute)>(sym(nullptr, "cuDeviceGetAttribute"));
      d.primary_ctx_get_state =
          reinterpret_cast<decltype(d.primary_ctx_get_state)>(sym(nullptr, "cuDevicePrimaryCtxGetState"));
      d.primary_ctx_retain = reinterpret_cast<decltype(d.primary_ctx_retain)>(sym(nullptr, "cuDevicePrimaryCtxRetain"));
      d.primary_ctx_release =
          reinterpret_cast<decltype(d.primary_ctx_release)>(sym("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"));
      d.ctx_push = reinterpret_cast<decltype(d.ctx_push)>(sym("cuCtxPushCurrent_v2", "cuCtxPushCurrent"));
      d.ctx_pop = reinterpret_cast<decltype(d.ctx_pop)>(sym("cuCtxPopCurrent_v2", "cuCtxPopCurrent"));
      d.mem_alloc = reinterpret_cast<decltype(d.mem_alloc)>(sym("cuMemAlloc_v2", "cuMemAlloc"));
      d.mem_free = reinterpret_cast<decltype(d.mem_free)>(sym("cuMemFree_v2", "cuMemFree"));
      d.memset_d8 = reinterpret_cast<decltype(d.memset_d8)>(sym("cuMemsetD8_v2", "cuMemsetD8"));
      d.stream_create = reinterpret_cast<decltype(d.stream_create)>(sym(nullptr, "cuStreamCreate"));
      d.stream_destroy = reinterpret_cast<decltype(d.stream_destroy)>(sym("cuStreamDestroy_v2", "cuStreamDestroy"));
      d.stream_synchronize = reinterpret_cast<decltype(d.stream_synchronize)>(sym(nullptr, "cuStreamSynchronize"));
      d.memcpy_peer_async = reinterpret_cast<decltype(d.memcpy_peer_async)>(sym(nullptr, "cuMemcpyPeerAsync"));
      d.can_access_peer = reinterpret_cast<decltype(d.can_access_peer)>(sym(nullptr, "cuDeviceCanAccessPeer"));
      d.ctx_enable_peer_access =
          reinterpret_cast<decltype(d.ctx_enable_peer_access)>(sym(nullptr, "cuCtxEnablePeerAccess"));
      d.ctx_disable_peer_access =
          reinterpret_cast<decltype(d.ctx_disable_peer_access)>(sym(nullptr, "cuCtxDisablePeerAccess"));
    }
    return s;
  }();
  return *g;
}

}  // namespace

Result<cudaStream_t> stream_for(int device, Lane lane) {
  Gpu& g = gpu();
  const int l = static_cast<int>(lane);
  cudaStream_t s;
  {
    std::lock_guard lock(g.mu);
    if (!g.streams[device][l]) {
      // never the legacy default stream itself; with DTMPI_GPU_ORDER=legacy a
      // blocking stream: its work waits for the legacy stream's earlier work
      // (a pageable cudaMemcpy may return before its DMA is done) without an
      // event record and wait per operation (a microsecond or more each)
      cudaStream_t created = nullptr;
      int least = 0, greatest = 0;  // numerically: greatest priority is the lowest number
      if (!DTMPI_CUDA_PROBE(cudaDeviceGetStreamPriorityRange(&least, &greatest))) {
        least = greatest = 0;
      }
      DTMPI_CUDA_CHECK(cudaStreamCreateWithPriority(
          &created, config().gpu_order_legacy && lane != Lane::kBatch ? cudaStreamDefault : cudaStreamNonBlocking,
          lane == Lane::kSync ? greatest : least));
      std::atomic_ref(g.streams[device][l]).store(created, std::memory_order_release);
      void* flag = nullptr;
      void* flag_dev = nullptr;
      if (g.driver.write_value32 && DTMPI_CUDA_PROBE(cudaHostAlloc(&flag, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable)) &&
          DTMPI_CUDA_PROBE(cudaHostGetDevicePointer(&flag_dev, flag, 0))) {
        *static_cast<volatile uint32_t*>(flag) = 0;
        g.done_flag[device][l] = static_cast<volatile uint32_t*>(flag);
        g.done_flag_dev[device][l] = reinterpret_cast<CUdeviceptr>(flag_dev);
        g.spin_ok[device][l] = true;
      }
    }
    s = g.streams[device][l];
  }
  return s;
}

BufferPool& device_pool(int device) {
  Gpu& g = gpu();
  std::lock_guard lock(g.mu);
  if (!g.device_pools[device])
    g.device_pools[device] = std::make_unique<BufferPool>(BufferPool::Kind::kDevice, device);
  return *g.device_pools[device];
}

BufferPool& pinned_pool() {
  Gpu& g = gpu();
  std::lock_guard lock(g.mu);
  if (!g.pinned_pool) g.pinned_pool = std::make_unique<BufferPool>(BufferPool::Kind::kPinnedHost, -1);
  return *g.pinned_pool;
}

bool gpu_enabled() { return gpu().enabled; }

const DriverCalls& driver() { return gpu().driver; }


// Waits for the work queued on `s`. Small operations finish in a few
// microseconds, where cudaStreamSynchronize's own cost shows: a stream write of
// a sequence number to mapped memory and a short spin on it return sooner. Work
// still running after the spin (or any error) goes to cudaStreamSynchronize,
// which also reports faults.
namespace {

// The lane of dtmpi's stream `s` on `device`: a load, not the creation lock
// (asked for every marker and every wait); stream_for publishes the stream
// with an atomic store.
int lane_of(int device, cudaStream_t s) {
  for (int l = 1; l < kLanes; ++l)
    if (s == std::atomic_ref(gpu().streams[device][l]).load(std::memory_order_acquire)) return l;
  return 0;
}

}  // namespace

HostFlag raise_host_flag(int device, cudaStream_t s) {
  Gpu& g = gpu();
  if (device < 0 || device >= kMaxDevices) return {};
  const int l = lane_of(device, s);
  if (!g.spin_ok[device][l]) return {};
  std::lock_guard lock(g.done_mu[device][l]);  // numbers reach the flag in the order they were taken
  const uint32_t seq = g.done_seq[device][l] + 1 == 0 ? 1 : g.done_seq[device][l] + 1;  // 0 means "none"
  if (!DTMPI_CU_PROBE(g.driver.write_value32(reinterpret_cast<CUstream>(s), g.done_flag_dev[device][l], seq, 0))) {
    cudaGetLastError();
    g.spin_ok[device][l] = false;  // stream memory operations unsupported here
    return {};
  }
  g.done_seq[device][l] = seq;
  return {seq, static_cast<uint8_t>(l)};
}

bool host_flag_reached(int device, HostFlag f) {
  Gpu& g = gpu();
  volatile uint32_t* word = g.done_flag[device][f.lane];
  return word && static_cast<int32_t>(*word - f.seq) >= 0;
}

Status finish(int device, cudaStream_t s) {
  DTMPI_TRACE("gpu: finish (work queued)");
  if (const HostFlag f = raise_host_flag(device, s); f.seq) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0;; ++i) {
      if (host_flag_reached(device, f)) {
        DTMPI_TRACE("gpu: finished (flag)");
        return ok_status();
      }
      if ((i & 255) == 255 && std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(200)) break;
    }
  }
  DTMPI_CUDA_CHECK(cudaStreamSynchronize(s));
  DTMPI_TRACE("gpu: finished (synchronize)");
  return ok_status();
}

int current_device() {
  int d = 0;
  if (!gpu_enabled() || !DTMPI_CUDA_WARN(cudaGetDevice(&d))) return 0;
  return d;
}

bool primary_context_active(int device) {
  const DriverCalls& d = driver();
  CUdevice dev = 0;
  unsigned int flags = 0;
  int active = 0;
  // unknown (no entry point, a failed call): active, so that nobody resets it
  if (!d.device_get || !d.primary_ctx_get_state || d.device_get(&dev, device) != CUDA_SUCCESS ||
      d.primary_ctx_get_state(dev, &flags, &active) != CUDA_SUCCESS)
    return true;
  return active != 0;
}

std::string gpu_pool_stats() {
  Gpu& g = gpu();
  if (!g.enabled) return "no GPU in use";
  std::string out;
  std::lock_guard lock(g.mu);
  if (g.pinned_pool) out += g.pinned_pool->describe();
  for (int d = 0; d < g.ndevices; ++d)
    if (g.device_pools[d]) out += (out.empty() ? "" : "; ") + g.device_pools[d]->describe();
  return out.empty() ? "pools unused" : out;
}

void at_gpu_release(void (*release)()) {
  Gpu& g = gpu();
  std::lock_guard lock(g.mu);
  g.release_hooks.push_back(release);
}

void release_gpu_resources() {
  Gpu& g = gpu();
  if (!g.enabled) return;
  std::vector<void (*)()> hooks;
  {
    std::lock_guard lock(g.mu);
    hooks = g.release_hooks;
  }
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) (*it)();
  std::lock_guard lock(g.mu);
  if (g.pinned_pool) g.pinned_pool->release_all();
  for (int d = 0; d < g.ndevices; ++d) {
    if (g.device_pools[d]) g.device_pools[d]->release_all();
    for (int l = 0; l < kLanes; ++l) {
      if (!g.streams[d][l]) continue;
      cudaStreamDestroy(g.streams[d][l]);
      std::atomic_ref(g.streams[d][l]).store(nullptr, std::memory_order_release);
      if (g.done_flag[d][l]) cudaFreeHost(const_cast<uint32_t*>(g.done_flag[d][l]));
      g.done_flag[d][l] = nullptr;
      g.spin_ok[d][l] = false;
    }
  }
}

bool allocation_of(const void* p, uintptr_t& start, size_t& size, unsigned long long& id) {
  Gpu& g = gpu();
  if (!g.enabled || !g.driver.pointer_get_attribute) return false;
  const auto addr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  CUdeviceptr lo = 0;
  if (!DTMPI_CU_PROBE(g.driver.pointer_get_attribute(&lo, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, addr)) ||
      !DTMPI_CU_PROBE(g.driver.pointer_get_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, addr)) ||
      !DTMPI_CU_PROBE(g.driver.pointer_get_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, addr)))
    return false;
  start = static_cast<uintptr_t>(lo);
  return true;
}

}  // namespace dtmpi::runtime
