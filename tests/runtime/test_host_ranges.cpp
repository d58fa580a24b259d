// runtime/host_ranges.hpp without a GPU: every address it calls host memory
// must lie in an ordinary (not /dev/nvidia*) mapping of the process, checked
// against /proc/self/maps; reservations without access (where the CUDA
// driver puts device memory) and mmap'd memory it cannot follow are never
// called host; thousands of random allocations and frees, from several threads.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/host_ranges.hpp"

namespace {

using dtmpi::runtime::provably_host;

int g_static_data[1024];
const char g_static_text[] = "read-only data of the executable";

// The mapping of /proc/self/maps holding `p`: its permissions and path
// ("" where none holds it).
struct Mapping {
  bool found = false;
  bool readable = false;
  std::string path;
};
Mapping mapping_of(const void* p) {
  Mapping m;
  const auto a = reinterpret_cast<uintptr_t>(p);
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return m;
  char line[1024];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    int off = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s%n", &lo, &hi, perms, &off) < 3) continue;
    if (a < lo || a >= hi) continue;
    m.found = true;
    m.readable = perms[0] == 'r';
    std::string rest = line + off;
    rest.erase(0, rest.find_first_not_of(" \t"));
    if (!rest.empty() && rest.back() == '\n') rest.pop_back();
    m.path = rest;
    break;
  }
  std::fclose(f);
  return m;
}

// provably_host(p) implies an ordinary readable mapping.
// AddressSanitizer's allocator takes malloc's blocks from its own mmap'ed
// regions, not the brk heap: there the heap answers nothing (correctly: the
// classification asks the driver), so the heap expectations do not apply.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMallocUsesBrk = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMallocUsesBrk = false;
#else
constexpr bool kMallocUsesBrk = true;
#endif
#else
constexpr bool kMallocUsesBrk = true;
#endif

void expect_sound(const void* p) {
  if (!provably_host(p)) return;
  const Mapping m = mapping_of(p);
  EXPECT_TRUE(m.found && m.readable) << p << " called host outside any readable mapping";
  EXPECT_EQ(m.path.find("/dev/nvidia"), std::string::npos) << p << " in " << m.path;
}

TEST(HostRanges, KnowsTheCommonPlaces) {
  char on_stack[64] = {};
  EXPECT_TRUE(provably_host(on_stack));
  EXPECT_TRUE(provably_host(on_stack + 63));
  void* small = std::malloc(100);
  if (kMallocUsesBrk) {
    EXPECT_TRUE(provably_host(small));  // main arena: the brk heap
    EXPECT_TRUE(provably_host(static_cast<char*>(small) + 99));
  }
  expect_sound(small);
  std::free(small);
  EXPECT_TRUE(provably_host(g_static_data));
  EXPECT_TRUE(provably_host(&g_static_data[1023]));
  EXPECT_TRUE(provably_host(g_static_text));
  const auto r = dtmpi::runtime::host_ranges();
  if (kMallocUsesBrk) {
    EXPECT_GT(r.heap_hi, r.heap_lo);
  }
  EXPECT_GT(r.stack_hi, r.stack_lo);
  EXPECT_GT(r.image_segments, 0);
}

TEST(HostRanges, NeverClaimsWhatItCannotFollow) {
  EXPECT_FALSE(provably_host(nullptr));
  // one past the end of the heap: not heap memory
  const auto r = dtmpi::runtime::host_ranges();
  EXPECT_FALSE(provably_host(reinterpret_cast<void*>(r.heap_hi)));
  // mmap'd memory can be unmapped and the address reused by the CUDA driver
  const size_t len = 1 << 20;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  EXPECT_FALSE(provably_host(m));
  // the same address as a reservation without access, like device memory's
  munmap(m, len);
  void* again = mmap(m, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(again, MAP_FAILED);
  EXPECT_FALSE(provably_host(again));
  EXPECT_FALSE(provably_host(static_cast<char*>(again) + len / 2));
  munmap(again, len);
  // a large malloc is an mmap of its own
  void* big = std::malloc(8 << 20);
  EXPECT_FALSE(provably_host(big));
  std::free(big);
}

// A call from a stack the thread's bounds do not describe (a coroutine on
// an mmap'd stack) must not take the span up to the thread's stack top for
// its stack.
ucontext_t g_main_ctx, g_co_ctx;
bool g_co_local_host = true, g_co_mmap_host = true;
void* g_co_probe = nullptr;
void coroutine() {
  char local[32] = {};
  g_co_local_host = provably_host(local) || dtmpi::runtime::provably_host_no_call(local);
  g_co_mmap_host = provably_host(g_co_probe);
  swapcontext(&g_co_ctx, &g_main_ctx);
}

TEST(HostRanges, CoroutineStackIsNotTheThreadStack) {
  const size_t len = 256 << 10;
  void* stack = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* probe = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  ASSERT_NE(probe, MAP_FAILED);
  g_co_probe = probe;
  getcontext(&g_co_ctx);
  g_co_ctx.uc_stack.ss_sp = stack;
  g_co_ctx.uc_stack.ss_size = len;
  g_co_ctx.uc_link = &g_main_ctx;
  makecontext(&g_co_ctx, coroutine, 0);
  swapcontext(&g_main_ctx, &g_co_ctx);
  EXPECT_FALSE(g_co_local_host);
  EXPECT_FALSE(g_co_mmap_host);
  munmap(stack, len);
  munmap(probe, 4096);
}

// Random allocations and frees of every size class (brk heap, arenas of
// other threads, mmap'd blocks, raw mappings, reservations without access),
// each classification checked against /proc/self/maps.
void random_rounds(unsigned seed, int rounds, int* claimed) {
  std::mt19937 rng(seed);
  struct Block {
    void* p;
    size_t len;
    int how;  // 0 malloc, 1 mmap rw, 2 mmap none
  };
  std::vector<Block> live;
  for (int i = 0; i < rounds; ++i) {
    if (live.size() < 64 && (live.empty() || rng() % 3 != 0)) {
      const int how = static_cast<int>(rng() % 3);
      const size_t len = how == 0 ? 1 + rng() % (rng() % 4 == 0 ? (1 << 20) : 4096) : 4096 * (1 + rng() % 64);
      void* p = how == 0 ? std::malloc(len)
                         : mmap(nullptr, len, how == 1 ? PROT_READ | PROT_WRITE : PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (!p || p == MAP_FAILED) continue;
      live.push_back({p, len, how});
    } else {
      const size_t k = rng() % live.size();
      Block b = live[k];
      live[k] = live.back();
      live.pop_back();
      if (b.how == 0)
        std::free(b.p);
      else
        munmap(b.p, b.len);
    }
    if (live.empty()) continue;
    const Block& b = live[rng() % live.size()];
    const size_t offsets[] = {0, b.len / 2, b.len - 1, b.len};  // one past the end too
    for (size_t off : offsets) {
      const char* q = static_cast<const char*>(b.p) + off;
      const bool host = provably_host(q);
      // the exported calls' fast path asks without a call: the same answer
      // once the thread and process are learned (glibc's break: always here)
      EXPECT_EQ(dtmpi::runtime::provably_host_no_call(q), host) << static_cast<const void*>(q);
      if (b.how != 0) {
        if (off < b.len) {
          EXPECT_FALSE(host) << "mmap'd block called host";
        }
      } else if (host) {
        ++*claimed;
      }
      if (host && rng() % 16 == 0) expect_sound(q);  // /proc/self/maps is slow: a sample
    }
  }
  for (auto& b : live) {
    if (b.how == 0)
      std::free(b.p);
    else
      munmap(b.p, b.len);
  }
}

TEST(HostRanges, RandomAllocationsOneThread) {
  int claimed = 0;
  random_rounds(1, 4000, &claimed);
  if (kMallocUsesBrk) {
    EXPECT_GT(claimed, 0);  // small blocks of the main thread: brk heap
  }
}

TEST(HostRanges, RandomAllocationsSeveralThreads) {
  std::vector<std::thread> threads;
  int claimed[4] = {};
  for (int t = 0; t < 4; ++t) threads.emplace_back(random_rounds, 100 + t, 2000, &claimed[t]);
  for (auto& t : threads) t.join();
  // each thread's own stack is proven host in that thread
  std::thread([] {
    char local[16] = {};
    EXPECT_TRUE(provably_host(local));
  }).join();
}

}  // namespace
