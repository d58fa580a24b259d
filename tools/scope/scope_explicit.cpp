// Explicit copies (thesis Table 6.1, rows "explicit"): pageable and pinned
// host memory (also bound to each NUMA node) to and from cudaMalloc memory,
// one GPU's memory to itself, GPU to GPU with and without peer access; one
// direction timed by CUDA events, both at once by the busy-wait start; and
// next to them the plain measurement (naive/...): cudaMemcpyAsync on the
// default stream + cudaStreamSynchronize, timed by the wall clock -- exactly
// what dtmpi-measure timed, so it reads these rows instead of measuring again.
#include <atomic>
#include <chrono>
#include <thread>

#include "scope_gpu.hpp"

namespace dtmpi::scope::gpu {
namespace {

struct End {
  Mem mem;
  int where;  // device for device memory, NUMA node (-1: any) for host memory
  int index;
};

const char* mem_name(Mem m) {
  switch (m) {
    case Mem::kPageable: return "pageable";
    case Mem::kPinned: return "pinned";
    case Mem::kDevice: return "device";
    case Mem::kManaged: return "managed";
  }
  return "?";
}

Status copy_async(void* d, const End& de, const void* s, const End& se, size_t n, cudaStream_t stream) {
  if (de.mem == Mem::kDevice && se.mem == Mem::kDevice && de.where != se.where)
    DTMPI_CUDA_CHECK(cudaMemcpyPeerAsync(d, de.where, s, se.where, n, stream));
  else
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(d, s, n, cudaMemcpyDefault, stream));
  return ok_status();
}

// One direction: src -> dst, issued on the stream of `device` (for GPU to GPU
// copies the destination: the receiver pulls, as dtmpi's device method does).
Status copy_row(benchmark::State& st, int64_t bytes, const std::string& row, End se, End de, int device, bool naive) {
  const size_t n = static_cast<size_t>(bytes);
  auto s = buffer(se.mem, se.where, se.index);
  auto d = buffer(de.mem, de.where, de.index);
  if (!s) return s.error();
  if (!d) return d.error();
  char *src = s.value(), *dst = d.value();
  const uint32_t seed = seed_of(row, bytes);
  DTMPI_TRY(fill(src, se.mem, se.where, n, seed));
  auto prepare = [&]() -> Status {
    flush(src, se.mem, n);
    flush(dst, de.mem, n);
    return ok_status();
  };
  if (naive) {
    DTMPI_TRY(wall_loop(st, prepare, [&]() -> Status {
      DTMPI_CUDA_CHECK(cudaSetDevice(device));
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, nullptr));
      DTMPI_CUDA_CHECK(cudaStreamSynchronize(nullptr));
      return ok_status();
    }));
  } else {
    auto l = lane(device);
    if (!l) return l.error();
    Lane& ln = *l.value();
    DTMPI_TRY(event_loop(st, ln, prepare, [&] { return copy_async(dst, de, src, se, n, ln.stream); }));
  }
  return check(dst, de.mem, {}, {}, n, seed, row);
}

// Both directions at once: a_src -> a_dst on d1, b_src -> b_dst on d2.
Status bidir_row(benchmark::State& st, int64_t bytes, const std::string& row, End as, End ad, End bs, End bd, int d1,
                 int d2, bool naive) {
  const size_t n = static_cast<size_t>(bytes);
  char* p[4];
  const End ends[4] = {as, ad, bs, bd};
  for (int i = 0; i < 4; ++i) {
    auto b = buffer(ends[i].mem, ends[i].where, ends[i].index);
    if (!b) return b.error();
    p[i] = b.value();
  }
  const uint32_t seed_a = seed_of(row, bytes), seed_b = seed_a ^ 0x5bd1e995u;
  DTMPI_TRY(fill(p[0], as.mem, as.where, n, seed_a));
  DTMPI_TRY(fill(p[2], bs.mem, bs.where, n, seed_b));
  auto prepare = [&]() -> Status {
    for (int i = 0; i < 4; ++i) flush(p[i], ends[i].mem, n);
    return ok_status();
  };
  auto dx = duplex(d1, d2);
  if (!dx) return dx.error();
  Duplex& x = *dx.value();
  auto op_a = [&](cudaStream_t s) { return copy_async(p[1], ad, p[0], as, n, s); };
  auto op_b = [&](cudaStream_t s) { return copy_async(p[3], bd, p[2], bs, n, s); };
  if (naive) {
    DTMPI_TRY(wall_loop(st, prepare, [&]() -> Status {
      DTMPI_CUDA_CHECK(cudaSetDevice(d1));
      DTMPI_TRY(op_a(x.s1));
      DTMPI_CUDA_CHECK(cudaSetDevice(d2));
      DTMPI_TRY(op_b(x.s2));
      DTMPI_CUDA_CHECK(cudaStreamSynchronize(x.s1));
      DTMPI_CUDA_CHECK(cudaStreamSynchronize(x.s2));
      return ok_status();
    }));
  } else {
    DTMPI_TRY(duplex_loop(st, x, prepare, op_a, op_b));
  }
  DTMPI_TRY(check(p[1], ad.mem, {}, {}, n, seed_a, row + " (first direction)"));
  return check(p[3], bd.mem, {}, {}, n, seed_b, row + " (second direction)");
}

// Pageable copies block the calling thread, so the busy-wait start cannot
// order them (the first call would not return before its copy ended): two
// threads start together and the wall clock runs until both copies are done.
Status pageable_bidir(benchmark::State& st, int64_t bytes, const std::string& row, int node, int device) {
  const size_t n = static_cast<size_t>(bytes);
  auto h0 = buffer(Mem::kPageable, node, 0), h1 = buffer(Mem::kPageable, node, 1);
  auto d0 = buffer(Mem::kDevice, device, 0), d1 = buffer(Mem::kDevice, device, 1);
  for (auto* r : {&h0, &h1, &d0, &d1})
    if (!*r) return r->error();
  const uint32_t seed_a = seed_of(row, bytes), seed_b = seed_a ^ 0x5bd1e995u;
  DTMPI_TRY(fill(h0.value(), Mem::kPageable, node, n, seed_a));
  DTMPI_TRY(fill(d1.value(), Mem::kDevice, device, n, seed_b));
  auto dx = duplex(device, device);
  if (!dx) return dx.error();
  Duplex& x = *dx.value();
  std::atomic<int> go{0}, done{0};
  std::atomic<bool> stop{false};
  cudaError_t worker_error = cudaSuccess;
  std::thread worker([&] {
    cudaSetDevice(device);
    for (int round = 1;; ++round) {
      while (go.load(std::memory_order_acquire) < round && !stop.load()) {
      }
      if (stop.load()) return;
      cudaError_t e = cudaMemcpyAsync(h1.value(), d1.value(), n, cudaMemcpyDefault, x.s2);
      if (e == cudaSuccess) e = cudaStreamSynchronize(x.s2);
      if (e != cudaSuccess) worker_error = e;
      done.store(round, std::memory_order_release);
    }
  });
  Status result = ok_status();
  int round = 0;
  for (auto _ : st) {
    flush(h0.value(), Mem::kPageable, n);
    flush(h1.value(), Mem::kPageable, n);
    ++round;
    const auto t0 = std::chrono::steady_clock::now();
    go.store(round, std::memory_order_release);
    cudaError_t e = cudaMemcpyAsync(d0.value(), h0.value(), n, cudaMemcpyDefault, x.s1);
    if (e == cudaSuccess) e = cudaStreamSynchronize(x.s1);
    while (done.load(std::memory_order_acquire) < round) {
    }
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (e == cudaSuccess) e = worker_error;
    if (e != cudaSuccess) {
      result = cuda_status(e, "cudaMemcpyAsync of pageable memory");
      break;
    }
  }
  stop.store(true);
  worker.join();
  DTMPI_TRY(result);
  DTMPI_TRY(check(d0.value(), Mem::kDevice, {}, {}, n, seed_a, row + " (host to device)"));
  return check(h1.value(), Mem::kPageable, {}, {}, n, seed_b, row + " (device to host)");
}

void host_device_rows(Mem mem, int node, const std::string& skip) {
  const int g = options().gpu;
  const std::string fam = mem_name(mem);
  const std::string where = (node >= 0 ? "node" + std::to_string(node) + "-" : "") + place(g);
  const auto sizes = sizes_up_to(int64_t{1} << 40);
  const End host0{mem, node, 0}, host1{mem, node, 1}, dev0{Mem::kDevice, g, 0}, dev1{Mem::kDevice, g, 1};
  for (bool naive : {false, true}) {
    if (naive && node >= 0) continue;  // the plain comparison once, without NUMA binding
    const std::string pre = naive ? "naive/" : "";
    auto bind = [node](const Body& b) -> Body {
      if (node < 0) return b;
      return [b, node](benchmark::State& st, int64_t n) -> Status {
        numa().run_on_node(node);
        Status s = b(st, n);
        numa().run_on_node(-1);
        return s;
      };
    };
    const std::string h2d = pre + fam + "/h2d/" + where, d2h = pre + fam + "/d2h/" + where,
                      bi = pre + fam + "/bidir/" + where;
    add({.name = h2d, .body = bind([=](benchmark::State& st, int64_t n) -> Status { return copy_row(st, n, h2d, host0, dev0, g, naive); }),
         .skip = skip, .sizes = sizes});
    add({.name = d2h, .body = bind([=](benchmark::State& st, int64_t n) -> Status { return copy_row(st, n, d2h, dev1, host1, g, naive); }),
         .skip = skip, .sizes = sizes});
    if (mem == Mem::kPageable && naive) continue;  // both pageable directions block: no plain form to compare
    Body body = mem == Mem::kPageable
                    ? Body([=](benchmark::State& st, int64_t n) -> Status { return pageable_bidir(st, n, bi, node, g); })
                    : Body([=](benchmark::State& st, int64_t n) -> Status {
                        return bidir_row(st, n, bi, host0, dev0, dev1, host1, g, g, naive);
                      });
    add({.name = bi, .body = bind(body), .skip = skip, .sizes = sizes, .multiplier = 2});
  }
}

void device_rows(const std::string& skip) {
  const int g = options().gpu, p = options().peer;
  const auto sizes = sizes_up_to(int64_t{1} << 40);
  for (bool naive : {false, true}) {
    const std::string row = std::string(naive ? "naive/" : "") + "device/d2d/" + place(g);
    add({.name = row, .body = [=](benchmark::State& st, int64_t n) -> Status {
           return copy_row(st, n, row, {Mem::kDevice, g, 0}, {Mem::kDevice, g, 1}, g, naive);
         }, .skip = skip, .sizes = sizes});
  }
  // GPU to GPU: with peer access (and the plain measurement of it), without
  std::string two = skip;
  if (two.empty() && p < 0) two = "one GPU (the GPU to GPU rows need two; --peer N)";
  for (const char* fam : {"peer", "naive/peer", "nopeer"}) {
    const bool peer = std::string(fam) != "nopeer", naive = std::string(fam) == "naive/peer";
    const std::string why = !two.empty() ? two : (peer && !machine().peer_ok ? machine().no_peer : "");
    for (auto [a, b] : {std::pair{g, p}, std::pair{p, g}}) {
      const std::string row = std::string(fam) + "/d2d/" + place(a, b);
      add({.name = row, .body = [=](benchmark::State& st, int64_t n) -> Status {
             DTMPI_TRY(set_peer_access(a, b, peer));
             return copy_row(st, n, row, {Mem::kDevice, a, 0}, {Mem::kDevice, b, 1}, b, naive);
           }, .skip = why, .sizes = sizes});
      if (!why.empty()) break;  // a skipped row once
    }
    const std::string row = std::string(fam) + "/bidir/" + place(g, p);
    add({.name = row, .body = [=](benchmark::State& st, int64_t n) -> Status {
           DTMPI_TRY(set_peer_access(g, p, peer));
           return bidir_row(st, n, row, {Mem::kDevice, g, 0}, {Mem::kDevice, p, 1}, {Mem::kDevice, p, 0},
                            {Mem::kDevice, g, 1}, p, g, naive);
         }, .skip = why, .sizes = sizes, .multiplier = 2});
  }
}

}  // namespace

void register_explicit_rows() {
  const std::string skip = machine().gpus ? "" : machine().no_gpu;
  for (Mem mem : {Mem::kPageable, Mem::kPinned}) {
    host_device_rows(mem, -1, skip);
    if (machine().numa_nodes > 1 && skip.empty()) {
      for (int node : numa().ids) host_device_rows(mem, node, skip);
    } else {
      add({.name = std::string(mem_name(mem)) + "/h2d/nodeN-" + place(options().gpu),
           .skip = skip.empty() ? machine().no_numa : skip});
    }
  }
  device_rows(skip);
}

}  // namespace dtmpi::scope::gpu
