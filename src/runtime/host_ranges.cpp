// runtime/host_ranges.hpp: the regions, learned once, checked with loads and
// compares (no lock, no system call after the first call of each thread).
#include "runtime/host_ranges.hpp"

#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

namespace dtmpi::runtime {

namespace host_ranges_detail {
ProcessRanges g_process;
std::atomic<bool> g_process_ready{false};
__thread ThreadStack t_stack __attribute__((tls_model("initial-exec"))) = {0, 0, false};
OwnedRanges g_owned;
}  // namespace host_ranges_detail

namespace {

using host_ranges_detail::g_process;
using host_ranges_detail::g_process_ready;
using host_ranges_detail::kMaxSegments;
using host_ranges_detail::ProcessRanges;
using host_ranges_detail::t_stack;
using host_ranges_detail::ThreadStack;

uintptr_t learn_heap_start() {
  uintptr_t lo = 0;
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
      if (!std::strstr(line, "[heap]")) continue;
      unsigned long a = 0, b = 0;
      if (std::sscanf(line, "%lx-%lx", &a, &b) == 2) lo = a;
      break;
    }
    std::fclose(f);
  }
  if (lo == 0) lo = reinterpret_cast<uintptr_t>(sbrk(0));
  return lo;
}

const ProcessRanges& process_ranges() {
  static const bool learned = [] {
    ProcessRanges r;
    r.heap_lo = learn_heap_start();
    // the first object dl_iterate_phdr reports is the main program
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* out = static_cast<ProcessRanges*>(data);
          const long page = sysconf(_SC_PAGESIZE);
          for (int i = 0; i < info->dlpi_phnum && out->segments < kMaxSegments; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
            const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
            const uintptr_t hi = lo + ph.p_memsz;
            // the mapping covers whole pages: round out (bss ends inside one)
            out->seg_lo[out->segments] = lo & ~static_cast<uintptr_t>(page - 1);
            out->seg_hi[out->segments] = (hi + static_cast<uintptr_t>(page) - 1) & ~static_cast<uintptr_t>(page - 1);
            ++out->segments;
          }
          return 1;  // the main program only: shared libraries can be unloaded
        },
        &r);
    g_process = r;
    g_process_ready.store(true, std::memory_order_release);
    return true;
  }();
  (void)learned;
  return g_process;
}

const ThreadStack& thread_stack() {
  ThreadStack& s = t_stack;
  if (!s.asked) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
        s.lo = reinterpret_cast<uintptr_t>(addr);
        s.hi = s.lo + size;
      }
      pthread_attr_destroy(&attr);
    }
    s.asked = true;
  }
  return s;
}

}  // namespace

uintptr_t program_break_by_call() { return reinterpret_cast<uintptr_t>(sbrk(0)); }

namespace host_ranges_detail {
bool provably_host_first(const void* p) {
  (void)process_ranges();
  (void)thread_stack();
  return provably_host(p);
}
}  // namespace host_ranges_detail

namespace {
using host_ranges_detail::g_owned;
using host_ranges_detail::kMaxOwned;

std::mutex& owned_writer() {
  static auto* mu = new std::mutex;  // never destroyed: MPI_Free_mem may run in static destructors
  return *mu;
}

// One change of g_owned, under the writer's lock (the seqlock's write side).
template <class F>
void change_owned(F&& f) {
  seqlock::write(g_owned.seq, std::forward<F>(f));
}

// Removes slot i (the last slot moves into it), inside change_owned.
void remove_slot(int i) {
  const int last = g_owned.count.load(std::memory_order_relaxed) - 1;
  g_owned.lo[i].store(g_owned.lo[last].load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_owned.hi[i].store(g_owned.hi[last].load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_owned.count.store(last, std::memory_order_relaxed);
}
}  // namespace

bool add_host_range(const void* p, size_t bytes) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (p == nullptr || bytes == 0 || lo + bytes < lo) return false;
  const uintptr_t hi = lo + bytes;
  std::lock_guard lock(owned_writer());
  bool added = false;
  change_owned([&] {
    // overlapping entries were released without our seeing (MPI_Free_mem
    // of another MPI library, a program error): they prove nothing now
    for (int i = g_owned.count.load(std::memory_order_relaxed) - 1; i >= 0; --i)
      if (g_owned.lo[i].load(std::memory_order_relaxed) < hi && lo < g_owned.hi[i].load(std::memory_order_relaxed))
        remove_slot(i);
    const int n = g_owned.count.load(std::memory_order_relaxed);
    if (n == kMaxOwned) return;
    g_owned.lo[n].store(lo, std::memory_order_relaxed);
    g_owned.hi[n].store(hi, std::memory_order_relaxed);
    g_owned.count.store(n + 1, std::memory_order_relaxed);
    added = true;
  });
  return added;
}

bool drop_host_range(const void* p) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(owned_writer());
  const int n = g_owned.count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (g_owned.lo[i].load(std::memory_order_relaxed) == lo) {
      change_owned([&] { remove_slot(i); });
      return true;
    }
  return false;
}

void drop_all_host_ranges() {
  std::lock_guard lock(owned_writer());
  if (g_owned.count.load(std::memory_order_relaxed) == 0) return;
  change_owned([] { g_owned.count.store(0, std::memory_order_relaxed); });
}

int host_range_count() { return g_owned.count.load(std::memory_order_relaxed); }

HostRanges host_ranges() {
  const ProcessRanges& r = process_ranges();
  const ThreadStack& s = thread_stack();
  HostRanges h;
  h.heap_lo = r.heap_lo;
  h.heap_hi = program_break();
  h.stack_lo = s.lo;
  h.stack_hi = s.hi;
  h.image_segments = r.segments;
  return h;
}

}  // namespace dtmpi::runtime
