#include "scope_gpu.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "scope_kernels.hpp"

namespace dtmpi::scope::gpu {
namespace {

struct Allocation {
  char* p = nullptr;
  Mem mem = Mem::kDevice;
  int where = -1;
};

std::map<std::tuple<int, int, int>, Allocation>& allocations() {  // (mem, where, index)
  static std::map<std::tuple<int, int, int>, Allocation> a;
  return a;
}

void free_one(const Allocation& a) {
  if (!a.p) return;
  switch (a.mem) {
    case Mem::kDevice:
    case Mem::kManaged: cudaFree(a.p); break;
    case Mem::kPinned:
      if (a.where < 0) {
        cudaFreeHost(a.p);
      } else {
        cudaHostUnregister(a.p);
        numa().free(a.p, capacity());
      }
      break;
    case Mem::kPageable: a.where < 0 ? std::free(a.p) : numa().free(a.p, capacity()); break;
  }
  cudaGetLastError();
}

Result<char*> allocate(Mem mem, int where) {
  const size_t n = capacity();
  void* p = nullptr;
  const std::string size = bytes_text(static_cast<double>(n));
  switch (mem) {
    case Mem::kDevice:
      DTMPI_CUDA_CHECK(cudaSetDevice(where));
      DTMPI_CUDA_CHECK(cudaMalloc(&p, n));
      break;
    case Mem::kManaged: DTMPI_CUDA_CHECK(cudaMallocManaged(&p, n, cudaMemAttachGlobal)); break;
    case Mem::kPinned:
    case Mem::kPageable:
      if (mem == Mem::kPinned && where < 0) {
        DTMPI_CUDA_CHECK(cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable));
        break;
      }
      p = where >= 0 ? numa().alloc_onnode(n, where) : std::aligned_alloc(4096, n);
      if (!p) return Error{kErrUnsupported, "host allocation of " + size + (where >= 0 ? " on NUMA node " + std::to_string(where) : "") + " failed"};
      std::memset(p, 0, n);  // fault the pages in now (on their node), not inside a timed copy
      if (mem == Mem::kPinned) {
        const cudaError_t e = cudaHostRegister(p, n, cudaHostRegisterMapped | cudaHostRegisterPortable);
        if (e != cudaSuccess) {
          numa().free(p, n);
          DTMPI_CUDA_CHECK(e);
        }
      }
      break;
  }
  return static_cast<char*>(p);
}

std::map<int, Lane>& lanes() {
  static std::map<int, Lane> l;
  return l;
}
std::map<std::pair<int, int>, Duplex>& duplexes() {
  static std::map<std::pair<int, int>, Duplex> d;
  return d;
}

}  // namespace

size_t capacity() {
  int64_t most = 4096;
  for (int64_t s : options().sizes) most = std::max(most, s);
  return (static_cast<size_t>(most) + 4095) / 4096 * 4096;
}

Result<char*> buffer(Mem mem, int where, int index) {
  auto& all = allocations();
  if (mem == Mem::kManaged) where = -1;
  const auto key = std::make_tuple(static_cast<int>(mem), where, index);
  if (auto it = all.find(key); it != all.end()) return it->second.p;
  if ((mem == Mem::kPinned || mem == Mem::kPageable) && where >= 0) {
    // one NUMA node's buffers of a kind at a time: a machine with 8 nodes need not hold 8 sets
    for (auto it = all.begin(); it != all.end();) {
      const auto& [m, w, i] = it->first;
      if (m == static_cast<int>(mem) && w >= 0 && w != where && i == index) {
        free_one(it->second);
        it = all.erase(it);
      } else {
        ++it;
      }
    }
  }
  auto p = allocate(mem, where);
  if (!p) return p.error();
  all[key] = Allocation{p.value(), mem, where};
  return p.value();
}

void release_buffers() {
  for (auto& [key, a] : allocations()) free_one(a);
  allocations().clear();
}

Result<Lane*> lane(int device) {
  auto& all = lanes();
  if (auto it = all.find(device); it != all.end()) return &it->second;
  Lane l;
  l.device = device;
  DTMPI_CUDA_CHECK(cudaSetDevice(device));
  DTMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
  DTMPI_CUDA_CHECK(cudaEventCreate(&l.start));
  DTMPI_CUDA_CHECK(cudaEventCreate(&l.stop));
  return &(all[device] = l);
}

Result<double> time_events(Lane& l, const std::function<Status()>& op) {
  DTMPI_CUDA_CHECK(cudaSetDevice(l.device));
  DTMPI_CUDA_CHECK(cudaEventRecord(l.start, l.stream));
  DTMPI_TRY(op());
  DTMPI_CUDA_CHECK(cudaEventRecord(l.stop, l.stream));
  DTMPI_CUDA_CHECK(cudaEventSynchronize(l.stop));
  float ms = 0;
  DTMPI_CUDA_CHECK(cudaEventElapsedTime(&ms, l.start, l.stop));
  return ms * 1e-3;
}

Result<Duplex*> duplex(int d1, int d2) {
  auto& all = duplexes();
  if (auto it = all.find({d1, d2}); it != all.end()) return &it->second;
  Duplex d;
  d.d1 = d1;
  d.d2 = d2;
  DTMPI_CUDA_CHECK(cudaSetDevice(d1));
  DTMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&d.s1, cudaStreamNonBlocking));
  DTMPI_CUDA_CHECK(cudaEventCreate(&d.start));
  DTMPI_CUDA_CHECK(cudaEventCreate(&d.stop));
  DTMPI_CUDA_CHECK(cudaEventCreate(&d.end1));
  DTMPI_CUDA_CHECK(cudaSetDevice(d2));
  DTMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&d.s2, cudaStreamNonBlocking));
  DTMPI_CUDA_CHECK(cudaEventCreate(&d.done));
  DTMPI_CUDA_CHECK(cudaEventCreate(&d.end2));
  return &(all[{d1, d2}] = d);
}

Result<DuplexTime> time_duplex(Duplex& d, const std::function<Status(cudaStream_t)>& op1,
                               const std::function<Status(cudaStream_t)>& op2) {
  DuplexTime t;
  for (;;) {
    DTMPI_CUDA_CHECK(cudaSetDevice(d.d1));
    DTMPI_CUDA_CHECK(kernels::spin(d.wait_ns, d.s1));
    DTMPI_CUDA_CHECK(cudaEventRecord(d.start, d.s1));
    DTMPI_CUDA_CHECK(cudaStreamWaitEvent(d.s2, d.start, 0));
    DTMPI_TRY(op1(d.s1));
    DTMPI_CUDA_CHECK(cudaEventRecord(d.end1, d.s1));
    DTMPI_CUDA_CHECK(cudaSetDevice(d.d2));
    DTMPI_TRY(op2(d.s2));
    DTMPI_CUDA_CHECK(cudaEventRecord(d.end2, d.s2));
    DTMPI_CUDA_CHECK(cudaEventRecord(d.done, d.s2));
    DTMPI_CUDA_CHECK(cudaSetDevice(d.d1));
    DTMPI_CUDA_CHECK(cudaStreamWaitEvent(d.s1, d.done, 0));
    DTMPI_CUDA_CHECK(cudaEventRecord(d.stop, d.s1));
    // the validity check: `start` must not have fired before everything was queued
    const cudaError_t q = cudaEventQuery(d.start);
    cudaGetLastError();  // cudaErrorNotReady is an answer, not a fault
    DTMPI_CUDA_CHECK(cudaEventSynchronize(d.stop));
    if (q == cudaSuccess) {
      d.wait_ns *= 2;
      ++t.restarts;
      if (d.wait_ns > 1000000000ull)
        return Error{kErrCuda, "busy-wait start: the CPU took more than a second to queue both directions"};
      continue;
    }
    if (q != cudaErrorNotReady) DTMPI_CUDA_CHECK(q);
    float ms = 0, ms1 = 0, ms2 = 0;
    DTMPI_CUDA_CHECK(cudaEventElapsedTime(&ms, d.start, d.stop));
    t.seconds = ms * 1e-3;
    if (d.d1 == d.d2) {  // events of one device compare across its streams
      DTMPI_CUDA_CHECK(cudaEventElapsedTime(&ms1, d.start, d.end1));
      DTMPI_CUDA_CHECK(cudaEventElapsedTime(&ms2, d.start, d.end2));
      const double longer = std::max(ms1, ms2);
      t.skew = longer > 0 ? std::abs(ms1 - ms2) / longer : 0;
    }
    return t;
  }
}

Status fill(void* p, Mem mem, int device, size_t span, uint32_t seed) {
  if (mem == Mem::kDevice) {
    auto l = lane(device);
    if (!l) return l.error();
    DTMPI_CUDA_CHECK(cudaSetDevice(device));
    DTMPI_CUDA_CHECK(kernels::write(p, span, seed, l.value()->stream));
    DTMPI_CUDA_CHECK(cudaStreamSynchronize(l.value()->stream));
    return ok_status();
  }
  fill_host(p, span, seed);  // host, pinned, managed (its pages then live on the host)
  return ok_status();
}

Status check(const void* dst, Mem mem, const Layout& dl, const Layout& sl, size_t bytes, uint32_t seed,
             const std::string& what) {
  if (bytes == 0) return ok_status();
  std::vector<std::pair<size_t, size_t>> windows;  // [k0, k1) of useful bytes
  if (bytes <= (size_t{1} << 20)) {
    windows.push_back({0, bytes});
  } else {
    for (size_t i = 0; i < 16; ++i) {
      const size_t k0 = i * (bytes - 4096) / 15;
      windows.push_back({k0, k0 + 4096});
    }
  }
  std::vector<unsigned char> copy;
  const auto* d = static_cast<const unsigned char*>(dst);
  for (const auto& [k0, k1] : windows) {
    const size_t lo = dl.at(k0), hi = dl.at(k1 - 1) + 1;
    const unsigned char* region = d + lo;
    if (mem == Mem::kDevice) {
      copy.resize(hi - lo);
      DTMPI_CUDA_CHECK(cudaMemcpy(copy.data(), d + lo, hi - lo, cudaMemcpyDefault));
      region = copy.data();
    }
    for (size_t k = k0; k < k1; ++k) {
      const unsigned char want = pattern(sl.at(k), seed), got = region[dl.at(k) - lo];
      if (got != want) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s: wrong bytes at %zu of %zu (0x%02x, expected 0x%02x)", what.c_str(), k, bytes,
                      got, want);
        return Error{kErrUnsupported, buf};
      }
    }
  }
  return ok_status();
}

void flush(const void* p, Mem mem, size_t bytes) {
  if (!options().flush || mem == Mem::kDevice || bytes > kFlushMax) return;
  flush_cache(p, bytes);
}

Status set_peer_access(int a, int b, bool on) {
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    DTMPI_CUDA_CHECK(cudaSetDevice(x));
    const cudaError_t e = on ? cudaDeviceEnablePeerAccess(y, 0) : cudaDeviceDisablePeerAccess(y);
    if (e == cudaErrorPeerAccessAlreadyEnabled || e == cudaErrorPeerAccessNotEnabled) {
      cudaGetLastError();
      continue;
    }
    DTMPI_CUDA_CHECK(e);
  }
  return ok_status();
}

uint32_t seed_of(const std::string& row, int64_t bytes) {
  return static_cast<uint32_t>(std::hash<std::string>{}(row) ^ static_cast<size_t>(bytes) * 0x9E3779B97F4A7C15ull);
}

Status event_loop(benchmark::State& state, Lane& l, const std::function<Status()>& prepare,
                  const std::function<Status()>& op) {
  for (auto _ : state) {
    if (prepare) DTMPI_TRY(prepare());
    auto t = time_events(l, op);
    if (!t) return t.error();
    state.SetIterationTime(t.value());
  }
  return ok_status();
}

Status duplex_loop(benchmark::State& state, Duplex& d, const std::function<Status()>& prepare,
                   const std::function<Status(cudaStream_t)>& op1, const std::function<Status(cudaStream_t)>& op2) {
  double skew = 0;
  int restarts = 0, skews = 0;
  for (auto _ : state) {
    if (prepare) DTMPI_TRY(prepare());
    auto t = time_duplex(d, op1, op2);
    if (!t) return t.error();
    state.SetIterationTime(t.value().seconds);
    restarts += t.value().restarts;
    if (t.value().skew >= 0) skew += t.value().skew, ++skews;
  }
  if (skews) state.counters["skew"] = skew / skews;
  state.counters["restarts"] = restarts;
  return ok_status();
}

Status wall_loop(benchmark::State& state, const std::function<Status()>& prepare, const std::function<Status()>& op) {
  for (auto _ : state) {
    if (prepare) DTMPI_TRY(prepare());
    const auto t0 = std::chrono::steady_clock::now();
    DTMPI_TRY(op());
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return ok_status();
}

cudaError_t prefetch(const void* p, size_t bytes, int device, cudaStream_t s) {
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device == cudaCpuDeviceId ? 0 : device;
  return cudaMemPrefetchAsync(p, bytes, loc, 0, s);
#else
  return cudaMemPrefetchAsync(p, bytes, device, s);
#endif
}

}  // namespace dtmpi::scope::gpu

namespace dtmpi::scope {
void register_gpu_rows() {
  gpu::register_explicit_rows();
  gpu::register_implicit_rows();
  gpu::register_strided_rows();
  gpu::register_cost_rows();
}
}  // namespace dtmpi::scope
