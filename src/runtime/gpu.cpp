// GPU runtime (CUDA builds): per-device streams and pools, and the
// orchestration of MPI_Pack/MPI_Unpack between any pair of memories (pointer
// classification: runtime/pointer_kind.cpp).
#include "runtime/gpu.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "pack/cpu_pack.hpp"
#include "pack/gpu_pack.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/config.hpp"
#include "runtime/gpu_internal.hpp"
#include "runtime/host_pool.hpp"
#include "runtime/stats.hpp"

namespace dtmpi::runtime {
namespace {

struct Gpu {
  bool enabled = false;
  int ndevices = 0;
  DriverCalls driver;

  std::mutex mu;  // guards lazy creation below
  // per device and lane (runtime/gpu.hpp: transfers, synchronous calls)
  cudaStream_t streams[kMaxDevices][kLanes] = {};
  volatile uint32_t* done_flag[kMaxDevices][kLanes] = {};  // mapped pinned word per stream
  CUdeviceptr done_flag_dev[kMaxDevices][kLanes] = {};
  uint32_t done_seq[kMaxDevices][kLanes] = {};
  std::mutex done_mu[kMaxDevices][kLanes];  // a sequence number is taken and its write queued under it
  bool spin_ok[kMaxDevices][kLanes] = {};
  std::unique_ptr<BufferPool> device_pools[kMaxDevices];
  std::unique_ptr<BufferPool> pinned_pool;
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

namespace {

// Whether `count` elements of `plan` are one block or rows of one block size
// at a constant positive pitch that the copy engine moves between device and
// pinned host memory as one 2D copy (`rows`: that layout). Such a copy costs
// what a pack kernel does on a GPU of its own (16-B rows: 6.6 vs 6.5 us for
// 64 KiB, 256-B rows: 4.9 vs 6.4), but when another process shares the GPU a
// kernel waits for a compute-engine context turn (~150 us on an H100) and the
// copy engine's turn costs ~10-14 us (bench/results/probe-shared-gpu-1xh100-2026-11-23.txt).
// Only the region measured: rows of at least 16 bytes, at most 8192 of them.
bool copy_engine_rows(const type::PackPlan& plan, int64_t count, type::StridedPlan& rows) {
  if (!plan.is_strided() || !plan.strided_for_count(count, rows) || rows.block <= 0) return false;
  if (rows.ndims == 0) return true;
  return rows.ndims == 1 && rows.block >= 16 && rows.dims[0].count <= 8192 && rows.dims[0].stride >= rows.block;
}

// Queues the copy of such `rows` between the user's device memory `user` and
// packed pinned memory `packed` (`to_packed`: a pack, else an unpack).
Status copy_rows(const type::StridedPlan& rows, void* user, void* packed, bool to_packed, cudaStream_t s) {
  const auto width = static_cast<size_t>(rows.block);
  const auto height = static_cast<size_t>(rows.ndims ? rows.dims[0].count : 1);
  const auto pitch = static_cast<size_t>(rows.ndims ? rows.dims[0].stride : rows.block);
  char* u = static_cast<char*>(user) + rows.offset;
  if (to_packed)
    DTMPI_CUDA_CHECK(cudaMemcpy2DAsync(packed, width, u, pitch, width, height, cudaMemcpyDeviceToHost, s));
  else
    DTMPI_CUDA_CHECK(cudaMemcpy2DAsync(u, pitch, packed, width, width, height, cudaMemcpyHostToDevice, s));
  return ok_status();
}

}  // namespace

bool copy_engine_layout(const type::PackPlan& plan, int64_t count) {
  type::StridedPlan rows;
  return copy_engine_rows(plan, count, rows);
}

Status gpu_pack(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                void* packed, const PointerInfo& pi, Lane lane) {
  const int64_t bytes = count * plan.size;
  if (!on_gpu(ui)) {  // host data into a device buffer: CPU pack into pinned, then copy
    DeviceScope scope(pi.device);
    auto s = stream_for(pi.device, lane);
    if (!s) return s.error();
    auto staging = pinned_pool().acquire(static_cast<size_t>(bytes));
    if (!staging) return staging.error();
    PoolLease lease(pinned_pool(), staging.value());
    pack::pack_host(plan, count, user, lease.get());
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, lease.get(), static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s.value()));
    DTMPI_TRY(finish(pi.device, s.value()));
    return ok_status();
  }
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, lane);
  if (!s) return s.error();
  void* direct = on_gpu(pi) ? packed : pi.device_ptr;  // device, managed, or mapped pinned
  int64_t offset = 0;
  if (on_gpu(pi) && plan.contiguous_for_count(count, offset)) {  // one copy-engine copy (also peer to peer)
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, static_cast<const char*>(user) + offset,
                                     static_cast<size_t>(bytes), cudaMemcpyDefault, s.value()));
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  type::StridedPlan rows;
  if (ui.kind == MemKind::kDevice && pi.kind == MemKind::kPinnedHost && copy_engine_rows(plan, count, rows)) {
    DTMPI_TRY(copy_rows(rows, const_cast<void*>(user), packed, true, s.value()));
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  if (direct) {
    DTMPI_TRACE("gpu: pack launching (synchronous)");
    DTMPI_TRY(pack::pack_device(plan, count, user, direct, ui.device, s.value()));
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  // pageable host destination: pack on the device, then one copy
  auto tmp = device_pool(ui.device).acquire(static_cast<size_t>(bytes));
  if (!tmp) return tmp.error();
  PoolLease lease(device_pool(ui.device), tmp.value());
  DTMPI_TRY(pack::pack_device(plan, count, user, lease.get(), ui.device, s.value()));
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, lease.get(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s.value()));
  DTMPI_TRY(finish(ui.device, s.value()));
  return ok_status();
}

Status gpu_unpack(const type::PackPlan& plan, int64_t count, const void* packed, const PointerInfo& pi,
                  void* user, const PointerInfo& ui, Lane lane) {
  const int64_t bytes = count * plan.size;
  if (!on_gpu(ui)) {  // device bytes into host data: copy to pinned, then CPU unpack
    DeviceScope scope(pi.device);
    auto s = stream_for(pi.device, lane);
    if (!s) return s.error();
    auto staging = pinned_pool().acquire(static_cast<size_t>(bytes));
    if (!staging) return staging.error();
    PoolLease lease(pinned_pool(), staging.value());
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(lease.get(), packed, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s.value()));
    DTMPI_TRY(finish(pi.device, s.value()));
    pack::unpack_host(plan, count, lease.get(), user);
    return ok_status();
  }
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, lane);
  if (!s) return s.error();
  const void* direct = on_gpu(pi) ? packed : pi.device_ptr;
  int64_t offset = 0;
  if (on_gpu(pi) && plan.contiguous_for_count(count, offset)) {
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(user) + offset, packed, static_cast<size_t>(bytes),
                                     cudaMemcpyDefault, s.value()));
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  type::StridedPlan rows;
  if (ui.kind == MemKind::kDevice && pi.kind == MemKind::kPinnedHost && copy_engine_rows(plan, count, rows)) {
    DTMPI_TRY(copy_rows(rows, user, const_cast<void*>(packed), false, s.value()));
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  if (direct) {
    DTMPI_TRY(pack::unpack_device(plan, count, direct, user, ui.device, s.value()));
    DTMPI_TRY(finish(ui.device, s.value()));
    return ok_status();
  }
  auto tmp = device_pool(ui.device).acquire(static_cast<size_t>(bytes));
  if (!tmp) return tmp.error();
  PoolLease lease(device_pool(ui.device), tmp.value());
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(lease.get(), packed, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s.value()));
  DTMPI_TRY(pack::unpack_device(plan, count, lease.get(), user, ui.device, s.value()));
  DTMPI_TRY(finish(ui.device, s.value()));
  return ok_status();
}

bool may_queue_pack(const PointerInfo& a, const PointerInfo& b) {
  return config().pack_async && config().gpu_order_legacy && a.kind == MemKind::kDevice &&
         b.kind == MemKind::kDevice && a.device == b.device;
}

namespace {

// The kernel (or, for a contiguous layout, the copy) on the legacy default
// stream of the buffers' device, not waited for: errors of the launch are
// reported here, faults of the kernel by the next call that synchronizes.
Status queue_on_legacy_stream(bool pack, const type::PackPlan& plan, int64_t count, void* user, void* packed,
                              int device) {
  DeviceScope scope(device);
  int64_t offset = 0;
  if (plan.contiguous_for_count(count, offset)) {
    char* u = static_cast<char*>(user) + offset;
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(pack ? packed : u, pack ? u : packed, static_cast<size_t>(count * plan.size),
                                     cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    return ok_status();
  }
  return pack ? pack::pack_device(plan, count, user, packed, device, cudaStreamLegacy)
              : pack::unpack_device(plan, count, packed, user, device, cudaStreamLegacy);
}

}  // namespace

Status gpu_pack_queued(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                       void* packed) {
  return queue_on_legacy_stream(true, plan, count, const_cast<void*>(user), packed, ui.device);
}

Status gpu_unpack_queued(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                         const PointerInfo& ui) {
  return queue_on_legacy_stream(false, plan, count, user, const_cast<void*>(packed), ui.device);
}

Result<Staging> acquire_staging(size_t bytes) {
  count(Counter::kStagingAcquired);
  Staging s;
  if (!gpu().enabled) {
    const HostBuffer h = host_pool_acquire(bytes);
    if (!h.ptr) return Error{MPI_ERR_NO_MEM, "staging buffer"};
    s.ptr = h.ptr;
    s.capacity = h.capacity;
    s.cls = h.cls;
    return s;
  }
  auto b = pinned_pool().acquire(bytes ? bytes : 1);
  if (!b) return b.error();
  s.ptr = b.value().ptr;
  s.capacity = b.value().capacity;
  s.cls = b.value().cls;
  s.pinned = true;
  return s;
}

void release_staging(Staging& s) {
  if (!s.ptr) return;
  count(Counter::kStagingReleased);
  if (s.pinned)
    pinned_pool().release(PooledBuffer{s.ptr, s.capacity, s.cls});
  else
    host_pool_release(HostBuffer{s.ptr, s.capacity, s.cls});
  s.ptr = nullptr;
}

// How the GPU packers see a staging buffer: pinned memory is mapped at the same
// address (UVA); `via_device` hides the mapping so the staged method is used.
PointerInfo staging_info(const Staging& staging, bool via_device) {
  PointerInfo si;
  si.kind = staging.pinned ? MemKind::kPinnedHost : MemKind::kHost;
  si.device_ptr = staging.pinned && !via_device ? staging.ptr : nullptr;
  return si;
}

Status stage_out(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                 const Staging& staging, bool via_device) {
  if (!on_gpu(ui)) {
    pack::pack_host(plan, count, user, staging.ptr);
    return ok_status();
  }
  return gpu_pack(plan, count, user, ui, staging.ptr, staging_info(staging, via_device));
}

Status stage_in(const type::PackPlan& plan, int64_t count, const Staging& staging, void* user,
                const PointerInfo& ui, bool via_device) {
  if (!on_gpu(ui)) {
    pack::unpack_host(plan, count, staging.ptr, user);
    return ok_status();
  }
  return gpu_unpack(plan, count, staging.ptr, staging_info(staging, via_device), user, ui);
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

void release_gpu_resources() {
  Gpu& g = gpu();
  if (!g.enabled) return;
  stop_batches();
  release_ipc_signals();
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
