// Transfers a kernel makes (thesis Table 6.1): zero-copy reads and writes of
// mapped host memory and of another GPU's memory, the custom copy kernels
// (host to device, device to host, within a GPU, GPU to GPU pulled by the
// receiver or pushed by the sender), and managed memory moved by demand
// (page faults of a reading kernel or of the CPU) or by prefetch.
#include <chrono>

#include "scope_gpu.hpp"
#include "scope_kernels.hpp"

namespace dtmpi::scope::gpu {
namespace {

Result<char*> buf(Mem m, int where, int index) { return buffer(m, where, index); }

#define SCOPE_BUF(var, mem, where, index) \
  auto var##_r = buf(mem, where, index);  \
  if (!var##_r) return var##_r.error();   \
  char* var = var##_r.value()

// --------------------------------------------------------------- zero-copy --
// A kernel on GPU `reader` reads `src` (mapped host memory or another GPU's).
Status zerocopy_read(benchmark::State& st, int64_t bytes, char* src, Mem mem, int reader) {
  const size_t n = static_cast<size_t>(bytes);
  auto l = lane(reader);
  if (!l) return l.error();
  return event_loop(
      st, *l.value(), [&]() -> Status { return flush(src, mem, n), ok_status(); },
      [&]() -> Status {
        DTMPI_CUDA_CHECK(kernels::read(src, n, l.value()->stream));
        return ok_status();
      });
}

// A kernel on `device` writes the pattern into dst (mapped host memory).
Status zerocopy_write(benchmark::State& st, int64_t bytes, const std::string& row, int device) {
  const size_t n = static_cast<size_t>(bytes);
  SCOPE_BUF(dst, Mem::kPinned, -1, 1);
  auto l = lane(device);
  if (!l) return l.error();
  const uint32_t seed = seed_of(row, bytes);
  DTMPI_TRY(event_loop(
      st, *l.value(), [&]() -> Status { return flush(dst, Mem::kPinned, n), ok_status(); },
      [&]() -> Status {
        DTMPI_CUDA_CHECK(kernels::write(dst, n, seed, l.value()->stream));
        return ok_status();
      }));
  return check(dst, Mem::kPinned, {}, {}, n, seed, row);
}

// ------------------------------------------------------------ copy kernels --
Status kernel_copy(benchmark::State& st, int64_t bytes, const std::string& row, Mem sm, int sw, Mem dm, int dw,
                   int device) {
  const size_t n = static_cast<size_t>(bytes);
  SCOPE_BUF(src, sm, sw, 0);
  SCOPE_BUF(dst, dm, dw, 1);
  const uint32_t seed = seed_of(row, bytes);
  DTMPI_TRY(fill(src, sm, sw, n, seed));
  auto l = lane(device);
  if (!l) return l.error();
  DTMPI_TRY(event_loop(
      st, *l.value(),
      [&]() -> Status {
        flush(src, sm, n);
        flush(dst, dm, n);
        return ok_status();
      },
      [&]() -> Status {
        DTMPI_CUDA_CHECK(kernels::copy(dst, src, n, l.value()->stream));
        return ok_status();
      }));
  return check(dst, dm, {}, {}, n, seed, row);
}

// ------------------------------------------------------------------ managed --
// Where a managed buffer's pages are before each iteration (untimed).
Status place_managed(const char* p, size_t n, int where) {
  auto l = lane(where == cudaCpuDeviceId ? options().gpu : where);
  if (!l) return l.error();
  DTMPI_CUDA_CHECK(prefetch(p, n, where, l.value()->stream));
  DTMPI_CUDA_CHECK(cudaStreamSynchronize(l.value()->stream));
  if (where == cudaCpuDeviceId) flush(p, Mem::kManaged, n);
  return ok_status();
}

// The CPU reads every 8 bytes (page faults migrate the pages to the host).
void cpu_read(const char* p, size_t n) {
  uint64_t sum = 0;
  const auto* q = reinterpret_cast<const volatile uint64_t*>(p);
  for (size_t i = 0; i < n / 8; ++i) sum += q[i];
  for (size_t i = n / 8 * 8; i < n; ++i) sum += static_cast<const volatile char*>(p)[i];
  benchmark::DoNotOptimize(sum);
}

enum class How { kDemand, kPrefetch };

// From `from` to `to` (a device, or cudaCpuDeviceId for the host).
Status managed_one(benchmark::State& st, int64_t bytes, const std::string& row, How how, int from, int to) {
  const size_t n = static_cast<size_t>(bytes);
  SCOPE_BUF(m, Mem::kManaged, -1, 0);
  const uint32_t seed = seed_of(row, bytes);
  DTMPI_TRY(place_managed(m, n, cudaCpuDeviceId));  // by DMA: the CPU writing pages on a GPU would fault them back
  fill_host(m, n, seed);
  auto prepare = [&] { return place_managed(m, n, from); };
  if (to == cudaCpuDeviceId && how == How::kDemand) {  // the CPU's page faults: synchronous, wall clock
    DTMPI_TRY(wall_loop(st, prepare, [&]() -> Status { return cpu_read(m, n), ok_status(); }));
  } else {
    auto l = lane(to == cudaCpuDeviceId ? from : to);
    if (!l) return l.error();
    cudaStream_t s = l.value()->stream;
    DTMPI_TRY(event_loop(st, *l.value(), prepare, [&]() -> Status {
      if (how == How::kDemand)
        DTMPI_CUDA_CHECK(kernels::read(m, n, s));
      else
        DTMPI_CUDA_CHECK(prefetch(m, n, to, s));
      return ok_status();
    }));
  }
  return check(m, Mem::kManaged, {}, {}, n, seed, row);  // the bytes survived the moves
}

// Both ways at once: buffer 0 from `a` to `b`, buffer 1 from `b` to `a`.
Status managed_both(benchmark::State& st, int64_t bytes, const std::string& row, How how, int a, int b) {
  const size_t n = static_cast<size_t>(bytes);
  SCOPE_BUF(m0, Mem::kManaged, -1, 0);
  SCOPE_BUF(m1, Mem::kManaged, -1, 1);
  const uint32_t seed0 = seed_of(row, bytes), seed1 = seed0 ^ 0x5bd1e995u;
  DTMPI_TRY(place_managed(m0, n, cudaCpuDeviceId));
  DTMPI_TRY(place_managed(m1, n, cudaCpuDeviceId));
  fill_host(m0, n, seed0);
  fill_host(m1, n, seed1);
  auto prepare = [&]() -> Status {
    DTMPI_TRY(place_managed(m0, n, a));
    return place_managed(m1, n, b);
  };
  const bool host = a == cudaCpuDeviceId;
  if (host && how == How::kDemand) {  // the GPU reads buffer 0 while the CPU reads buffer 1: wall clock
    auto l = lane(b);
    if (!l) return l.error();
    DTMPI_TRY(wall_loop(st, prepare, [&]() -> Status {
      DTMPI_CUDA_CHECK(cudaSetDevice(b));
      DTMPI_CUDA_CHECK(kernels::read(m0, n, l.value()->stream));
      cpu_read(m1, n);
      DTMPI_CUDA_CHECK(cudaStreamSynchronize(l.value()->stream));
      return ok_status();
    }));
  } else {
    // d1 runs what moves buffer 1 to it (a read on d1, or the prefetch to d1), d2 the other
    const int d1 = host ? b : a, d2 = b;
    auto dx = duplex(d1, d2);
    if (!dx) return dx.error();
    auto move = [&](char* m, int dest) {
      return [=](cudaStream_t s) -> Status {
        if (how == How::kDemand)
          DTMPI_CUDA_CHECK(kernels::read(m, n, s));
        else
          DTMPI_CUDA_CHECK(prefetch(m, n, dest, s));
        return ok_status();
      };
    };
    DTMPI_TRY(duplex_loop(st, *dx.value(), prepare, move(m1, a), move(m0, b)));
  }
  DTMPI_TRY(check(m0, Mem::kManaged, {}, {}, n, seed0, row + " (buffer 0)"));
  return check(m1, Mem::kManaged, {}, {}, n, seed1, row + " (buffer 1)");
}

}  // namespace

void register_implicit_rows() {
  const int g = options().gpu, p = options().peer;
  const std::string skip = machine().gpus ? "" : machine().no_gpu;
  const auto sizes = sizes_up_to(int64_t{1} << 40);
  std::string two = skip;
  if (two.empty() && p < 0) two = "one GPU (the GPU to GPU rows need two; --peer N)";
  if (two.empty() && !machine().peer_ok) two = machine().no_peer;
  auto with_peer = [](int a, int b, Body body) -> Body {
    return [=](benchmark::State& st, int64_t n) -> Status {
      DTMPI_TRY(set_peer_access(a, b, true));
      return body(st, n);
    };
  };
  // zero-copy
  add({.name = "zerocopy/h2d/" + place(g), .body = [g](benchmark::State& st, int64_t n) -> Status {
         SCOPE_BUF(src, Mem::kPinned, -1, 0);
         return zerocopy_read(st, n, src, Mem::kPinned, g);
       }, .skip = skip, .sizes = sizes});
  const std::string zw = "zerocopy/d2h/" + place(g);
  add({.name = zw, .body = [=](benchmark::State& st, int64_t n) -> Status { return zerocopy_write(st, n, zw, g); },
       .skip = skip, .sizes = sizes});
  for (auto [a, b] : {std::pair{g, p}, std::pair{p, g}}) {
    add({.name = "zerocopy/d2d/" + place(a, b), .body = with_peer(a, b, [a, b](benchmark::State& st, int64_t n) -> Status {
           SCOPE_BUF(src, Mem::kDevice, a, 0);
           return zerocopy_read(st, n, src, Mem::kDevice, b);
         }), .skip = two, .sizes = sizes});
    if (!two.empty()) break;
  }
  add({.name = "zerocopy/bidir/" + place(g, p), .body = with_peer(g, p, [g, p](benchmark::State& st, int64_t n) -> Status {
         SCOPE_BUF(on_g, Mem::kDevice, g, 0);
         SCOPE_BUF(on_p, Mem::kDevice, p, 0);
         auto dx = duplex(g, p);
         if (!dx) return dx.error();
         const size_t len = static_cast<size_t>(n);
         auto rd = [len](char* src) {
           return [=](cudaStream_t s) -> Status {
             DTMPI_CUDA_CHECK(kernels::read(src, len, s));
             return ok_status();
           };
         };
         return duplex_loop(st, *dx.value(), nullptr, rd(on_p), rd(on_g));
       }), .skip = two, .sizes = sizes, .multiplier = 2});
  // copy kernels
  auto kc = [&](const std::string& row, Mem sm, int sw, Mem dm, int dw, int dev, const std::string& why) {
    Body body = [=](benchmark::State& st, int64_t n) -> Status { return kernel_copy(st, n, row, sm, sw, dm, dw, dev); };
    add({.name = row, .body = sw == dw || sm != Mem::kDevice || dm != Mem::kDevice ? body : with_peer(sw, dw, body),
         .skip = why, .sizes = sizes});
  };
  kc("kernel/h2d/" + place(g), Mem::kPinned, -1, Mem::kDevice, g, g, skip);
  kc("kernel/d2h/" + place(g), Mem::kDevice, g, Mem::kPinned, -1, g, skip);
  kc("kernel/d2d/" + place(g), Mem::kDevice, g, Mem::kDevice, g, g, skip);
  kc("kernel-pull/d2d/" + place(g, p), Mem::kDevice, g, Mem::kDevice, p, p, two);
  kc("kernel-push/d2d/" + place(g, p), Mem::kDevice, g, Mem::kDevice, p, g, two);
  // managed memory
  const std::string mskip = !skip.empty() ? skip : machine().managed_ok ? "" : machine().no_managed;
  const std::string mtwo = !mskip.empty() ? mskip : two;
  const int host = cudaCpuDeviceId;
  for (How how : {How::kDemand, How::kPrefetch}) {
    const std::string fam = how == How::kDemand ? "managed-demand/" : "managed-prefetch/";
    auto one = [&](const std::string& dir, const std::string& where, int from, int to, const std::string& why) {
      const std::string row = fam + dir + "/" + where;
      add({.name = row, .body = [=](benchmark::State& st, int64_t n) -> Status { return managed_one(st, n, row, how, from, to); },
           .skip = why, .sizes = sizes});
    };
    auto both = [&](const std::string& where, int a, int b, const std::string& why) {
      const std::string row = fam + "bidir/" + where;
      add({.name = row, .body = [=](benchmark::State& st, int64_t n) -> Status { return managed_both(st, n, row, how, a, b); },
           .skip = why, .sizes = sizes, .multiplier = 2});
    };
    one("h2d", place(g), host, g, mskip);
    one("d2h", place(g), g, host, mskip);
    both(place(g), host, g, mskip);
    one("d2d", place(g, p), g, p, mtwo);
    if (mtwo.empty()) one("d2d", place(p, g), p, g, mtwo);
    both(place(g, p), g, p, mtwo);
  }
}

}  // namespace dtmpi::scope::gpu
