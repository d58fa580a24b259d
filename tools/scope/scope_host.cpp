// The rows that need no GPU (they run in CI): the host's own copy bandwidth,
// what dtmpi adds to an MPI call (interposed vs the system MPI's entry), and
// dtmpi's pointer classification of host memory. Also the host-memory helpers
// of every row: cache flushing, libnuma, the test pattern.
#include <dlfcn.h>
#include <mpi.h>
#include <sys/mman.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "runtime/pointer_kind.hpp"
#include "scope.hpp"
#include "scope_pattern.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dtmpi::scope {

bool flush_cache(const void* p, size_t bytes) {
  const auto* c = static_cast<const char*>(p);
#if defined(__x86_64__)
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
  if (bytes) _mm_clflush(c + bytes - 1);
  _mm_mfence();
  return true;
#elif defined(__aarch64__)
  for (size_t i = 0; i < bytes; i += 64) asm volatile("dc civac, %0" ::"r"(c + i) : "memory");
  if (bytes) asm volatile("dc civac, %0" ::"r"(c + bytes - 1) : "memory");
  asm volatile("dsb ish" ::: "memory");
  return true;
#else
  (void)c;
  (void)bytes;
  return false;
#endif
}

const Numa& numa() {
  static const Numa n = [] {
    Numa r;
    void* lib = dlopen("libnuma.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return r;
    auto available = reinterpret_cast<int (*)()>(dlsym(lib, "numa_available"));
    auto max_node = reinterpret_cast<int (*)()>(dlsym(lib, "numa_max_node"));
    auto node_size = reinterpret_cast<long long (*)(int, long long*)>(dlsym(lib, "numa_node_size64"));
    r.alloc_onnode = reinterpret_cast<void* (*)(size_t, int)>(dlsym(lib, "numa_alloc_onnode"));
    r.free = reinterpret_cast<void (*)(void*, size_t)>(dlsym(lib, "numa_free"));
    r.run_on_node = reinterpret_cast<int (*)(int)>(dlsym(lib, "numa_run_on_node"));
    if (!available || !max_node || !node_size || !r.alloc_onnode || !r.free || !r.run_on_node || available() < 0)
      return r;
    r.ok = true;
    r.nodes = 0;
    for (int node = 0; node <= max_node(); ++node) {
      long long free_bytes = 0;
      if (node_size(node, &free_bytes) > 0) r.ids.push_back(node);  // nodes with memory
    }
    r.nodes = r.ids.empty() ? 1 : static_cast<int>(r.ids.size());
    if (r.ids.empty()) r.ids.push_back(0);
    return r;
  }();
  return n;
}

void fill_host(void* p, size_t bytes, uint32_t seed) {
  // page by page: the in-page table xor the page's tag, 8 bytes at a time
  static const std::array<uint64_t, 512> table = [] {
    std::array<uint64_t, 512> t{};
    for (uint64_t i = 0; i < 4096; ++i) t[i / 8] |= uint64_t{pattern_in_page(i)} << (8 * (i % 8));
    return t;
  }();
  auto* c = static_cast<unsigned char*>(p);
  size_t off = 0;
  for (; off + 4096 <= bytes; off += 4096) {
    const uint64_t tag = pattern_page_tag(off, seed) * 0x0101010101010101ull;
    for (size_t w = 0; w < 512; ++w) {
      const uint64_t v = table[w] ^ tag;
      std::memcpy(c + off + 8 * w, &v, 8);
    }
  }
  for (; off < bytes; ++off) c[off] = pattern(off, seed);
}

namespace {

// ------------------------------------------------------------------ memcpy --
struct HostPair {
  char* a = nullptr;
  char* b = nullptr;
  size_t bytes = 0;
  int node_a = -1, node_b = -1;
  ~HostPair() { release(); }
  void release() {
    if (a) (node_a >= 0 ? numa().free(a, bytes) : std::free(a));
    if (b) (node_b >= 0 ? numa().free(b, bytes) : std::free(b));
    a = b = nullptr;
  }
  Status get(size_t n, int na, int nb) {
    if (a && n <= bytes && na == node_a && nb == node_b) return ok_status();
    release();
    bytes = (n + 4095) / 4096 * 4096;
    node_a = na;
    node_b = nb;
    auto alloc = [&](int node) -> char* {
      void* p = node >= 0 ? numa().alloc_onnode(bytes, node) : std::aligned_alloc(4096, bytes);
      if (p) std::memset(p, 1, bytes);  // fault the pages in (on their node) outside any timing
      return static_cast<char*>(p);
    };
    a = alloc(na);
    b = alloc(nb);
    if (!a || !b) return Error{kErrUnsupported, "host allocation of " + bytes_text(static_cast<double>(bytes)) + " failed"};
    return ok_status();
  }
};

HostPair& host_pair() {
  static HostPair p;
  return p;
}

Status host_memcpy(benchmark::State& state, int64_t bytes, int node_a, int node_b) {
  auto& hp = host_pair();
  DTMPI_TRY(hp.get(static_cast<size_t>(bytes), node_a, node_b));
  if (node_a >= 0) numa().run_on_node(node_a);
  fill_host(hp.a, static_cast<size_t>(bytes), 7);
  for (auto _ : state) {
    std::memcpy(hp.b, hp.a, static_cast<size_t>(bytes));
    benchmark::ClobberMemory();
  }
  if (node_a >= 0) numa().run_on_node(-1);
  if (std::memcmp(hp.a, hp.b, static_cast<size_t>(bytes)) != 0) return Error{kErrUnsupported, "memcpy check failed"};
  return ok_status();
}

// -------------------------------------------------- dtmpi's classification --
Status classify(benchmark::State& state, const void* p) {
  for (auto _ : state) {
    auto info = runtime::pointer_info(p);
    benchmark::DoNotOptimize(info);
  }
  return ok_status();
}

// --------------------------------------------------- one interposed MPI call --
Status mpi_test(benchmark::State& state, bool interposed) {
  MPI_Request req = MPI_REQUEST_NULL;
  int flag = 0;
  for (auto _ : state) {
    const int rc = interposed ? MPI_Test(&req, &flag, MPI_STATUS_IGNORE) : PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return Error{rc, "MPI_Test of MPI_REQUEST_NULL"};
  }
  return ok_status();
}

Status mpi_sendrecv_self(benchmark::State& state, bool interposed) {
  char out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8] = {};
  for (auto _ : state) {
    const int rc = interposed ? MPI_Sendrecv(out, 8, MPI_BYTE, 0, 5, in, 8, MPI_BYTE, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE)
                              : PMPI_Sendrecv(out, 8, MPI_BYTE, 0, 5, in, 8, MPI_BYTE, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return Error{rc, "MPI_Sendrecv to self"};
  }
  if (std::memcmp(in, out, 8) != 0) return Error{kErrUnsupported, "MPI_Sendrecv to self: wrong bytes"};
  return ok_status();
}

}  // namespace

void register_host_rows() {
  const auto sizes = sizes_up_to(int64_t{1} << 30);
  add({.name = "host/memcpy/local", .body = [](benchmark::State& s, int64_t b) -> Status { return host_memcpy(s, b, -1, -1); },
       .timing = Timing::kReal, .sizes = sizes});
  if (numa().ok && numa().nodes > 1) {
    const int a = numa().ids[0], b = numa().ids[1];
    add({.name = "host/memcpy/node" + std::to_string(a) + "-node" + std::to_string(b),
         .body = [a, b](benchmark::State& s, int64_t n) -> Status { return host_memcpy(s, n, a, b); },
         .timing = Timing::kReal, .sizes = sizes});
  } else {
    add({.name = "host/memcpy/node0-node1", .skip = machine().no_numa});
  }
  static char static_buf[64];
  static void* heap_buf = std::malloc(64);  // below 128 KiB: glibc's brk heap (proven host)
  static void* mapped = [] {
    void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }();
  add({.name = "dtmpi/classify/stack", .body = [](benchmark::State& s, int64_t) -> Status {
         char local[64];
         benchmark::DoNotOptimize(local);
         return classify(s, local);
       }, .timing = Timing::kReal});
  add({.name = "dtmpi/classify/heap", .body = [](benchmark::State& s, int64_t) -> Status { return classify(s, heap_buf); },
       .timing = Timing::kReal});
  add({.name = "dtmpi/classify/static", .body = [](benchmark::State& s, int64_t) -> Status { return classify(s, static_buf); },
       .timing = Timing::kReal});
  add({.name = "dtmpi/classify/mmap", .body = [](benchmark::State& s, int64_t) -> Status { return classify(s, mapped); },
       .timing = Timing::kReal});
  for (bool interposed : {true, false}) {
    const std::string who = interposed ? "interposed" : "system";
    add({.name = "dtmpi/mpi-test-null/" + who,
         .body = [interposed](benchmark::State& s, int64_t) -> Status { return mpi_test(s, interposed); },
         .timing = Timing::kReal});
    add({.name = "dtmpi/mpi-sendrecv-self-8B/" + who,
         .body = [interposed](benchmark::State& s, int64_t) -> Status { return mpi_sendrecv_self(s, interposed); },
         .timing = Timing::kReal});
  }
}

}  // namespace dtmpi::scope
