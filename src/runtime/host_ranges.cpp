// runtime/host_ranges.hpp: the regions, learned once, checked with loads and
// compares (no lock, no system call after the first call of each thread).
#include "runtime/host_ranges.hpp"

#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace dtmpi::runtime {

namespace host_ranges_detail {
ProcessRanges g_process;
std::atomic<bool> g_process_ready{false};
__thread ThreadStack t_stack __attribute__((tls_model("initial-exec"))) = {0, 0, false};
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
