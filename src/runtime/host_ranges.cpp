// runtime/host_ranges.hpp: the regions, learned once, checked with loads and
// compares (no lock, no system call after the first call of each thread).
#include "runtime/host_ranges.hpp"

#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace dtmpi::runtime {
namespace {

constexpr int kMaxSegments = 8;

struct ProcessRanges {
  uintptr_t heap_lo = 0;
  int segments = 0;
  uintptr_t seg_lo[kMaxSegments] = {};
  uintptr_t seg_hi[kMaxSegments] = {};
};

// The start of the brk heap: its mapping in /proc/self/maps, or, before the
// first allocation there, the break itself (the heap grows up from it).
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
  static const ProcessRanges ranges = [] {
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
    return r;
  }();
  return ranges;
}

// The calling thread's stack bounds, asked once per thread (for the main
// thread glibc reads /proc/self/maps). Initial-exec TLS: libdtmpi is loaded at
// start-up (preloaded or linked), and a load through __tls_get_addr would
// cost a call on every classification.
struct ThreadStack {
  uintptr_t lo = 0, hi = 0;
  bool asked = false;
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadStack t_stack;

const ThreadStack& thread_stack() {
  ThreadStack& s = t_stack;
  if (!s.asked) {
    s.asked = true;
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
  }
  return s;
}

}  // namespace

bool provably_host(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const ProcessRanges& r = process_ranges();
  // brk heap: the break only moves under malloc's lock; a stale (lower) value
  // read here only sends an address to the driver's query
  if (a >= r.heap_lo && a < reinterpret_cast<uintptr_t>(sbrk(0))) return true;
  // live stack: from this frame to the top is mapped stack of this thread;
  // a frame outside the thread's bounds (coroutine, signal stack) proves nothing
  const ThreadStack& s = thread_stack();
  const auto frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (frame >= s.lo && frame < s.hi && a >= frame && a < s.hi) return true;
  for (int i = 0; i < r.segments; ++i)
    if (a >= r.seg_lo[i] && a < r.seg_hi[i]) return true;
  return false;
}

HostRanges host_ranges() {
  const ProcessRanges& r = process_ranges();
  const ThreadStack& s = thread_stack();
  HostRanges h;
  h.heap_lo = r.heap_lo;
  h.heap_hi = reinterpret_cast<uintptr_t>(sbrk(0));
  h.stack_lo = s.lo;
  h.stack_hi = s.hi;
  h.image_segments = r.segments;
  return h;
}

}  // namespace dtmpi::runtime
