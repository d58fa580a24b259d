// Host memory that the process's own layout proves is not CUDA memory, told
// without a system call or a CUDA driver call (issue 29: the driver's pointer
// query costs 100-150 ns, a quarter of a host ping-pong).
//
// A CUDA allocation (device, managed, pinned by cudaHostAlloc, mapped from
// another process over IPC) is a mapping the driver makes with mmap. The
// kernel never places a new mapping over an existing one unless asked to
// (MAP_FIXED), and the driver never asks over memory it does not own. So an
// address inside a region the process holds as ordinary memory for as long as
// it is asked about cannot be CUDA memory:
//   * the brk heap, [start of the heap, sbrk(0)): glibc's main arena, where
//     malloc puts blocks below its mmap threshold (128 KiB);
//   * the calling thread's live stack, from the current frame up to the
//     stack's top (checked against the thread's stack bounds, so a call from
//     a coroutine or signal stack is not taken for it);
//   * the main executable's loaded segments (static and global data), which
//     are never unmapped.
//   * host memory whose whole lifetime dtmpi sees: MPI_Alloc_mem's, from its
//     return to MPI_Free_mem (add_host_range below).
//   * ordinary private anonymous mappings learned from /proc/self/maps, while
//     the kernel records no new mapping in the process (mmap'd buffers,
//     other threads' arenas: runtime/mapped_host.hpp).
// Anything else (shared libraries, file and device mappings, any mapping
// while the kernel's records cannot be watched) is not proven host here;
// runtime::pointer_info asks the driver. Not by a cache of the driver's "not
// CUDA memory" answers: glibc's free of a large block unmaps through an
// internal munmap no interposition sees (tests/runtime/test_unmap_visibility.cpp),
// after which the same address can be device memory -- the kernel's mapping
// records see the new mapping instead.
// Host memory page-locked later with cudaHostRegister stays host memory to
// MPI; that it is pinned is not seen here (pointer_info_exact sees it).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/mapped_host.hpp"
#include "runtime/seqlock_ranges.hpp"

namespace dtmpi::runtime {

namespace host_ranges_detail {
constexpr int kMaxSegments = 8;
// Learned once per process (ready once filled; read with loads only).
struct ProcessRanges {
  uintptr_t heap_lo = 0;
  int segments = 0;
  uintptr_t seg_lo[kMaxSegments] = {};
  uintptr_t seg_hi[kMaxSegments] = {};
};
extern ProcessRanges g_process __attribute__((visibility("hidden")));
extern std::atomic<bool> g_process_ready __attribute__((visibility("hidden")));
// The calling thread's stack bounds, learned on its first call (__thread:
// a plain TLS load, no C++ initialization wrapper on the hot path).
struct ThreadStack {
  uintptr_t lo, hi;
  bool asked;
};
extern __thread ThreadStack t_stack __attribute__((tls_model("initial-exec")));
// Host ranges whose lifetime dtmpi sees from start to end (add_host_range):
// a seqlock-guarded table (runtime/seqlock_ranges.hpp), read with loads
// only; `count` is the number of slots in use.
constexpr int kMaxOwned = 64;
struct OwnedRanges {
  std::atomic<uint32_t> seq{0};
  std::atomic<int> count{0};
  std::atomic<uintptr_t> lo[kMaxOwned] = {};
  std::atomic<uintptr_t> hi[kMaxOwned] = {};
};
extern OwnedRanges g_owned __attribute__((visibility("hidden")));
// True if `a` lies in an entry of g_owned. False also where a writer changed
// the table meanwhile: false only sends the address to the driver.
[[gnu::always_inline]] inline bool in_owned(uintptr_t a) {
  OwnedRanges& t = g_owned;
  if (t.count.load(std::memory_order_relaxed) == 0) return false;  // the common case: one load
  return seqlock::find(t.seq, t.count, t.lo, t.hi, a, [] {});
}
bool provably_host_first(const void* p);  // learns what is missing, then answers
// The stack pointer where this is inlined: every address from it up to the
// stack's top is live stack of this thread, the caller's own locals included.
inline uintptr_t stack_pointer() {
  uintptr_t sp;
#if defined(__x86_64__)
  asm volatile("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
  asm volatile("mov %0, sp" : "=r"(sp));
#else
  volatile char here = 0;  // at or above the stack pointer: safe, maybe short
  sp = reinterpret_cast<uintptr_t>(&here);
#endif
  return sp;
}
}  // namespace host_ranges_detail

// glibc's current program break, the value sbrk(0) returns, read without the
// call (weak: with another C library it is null and sbrk(0) answers)
extern "C" void* __curbrk __attribute__((weak));
uintptr_t program_break_by_call();
inline uintptr_t program_break() {
  if (&__curbrk != nullptr) return reinterpret_cast<uintptr_t>(__atomic_load_n(&__curbrk, __ATOMIC_RELAXED));
  return program_break_by_call();
}

namespace host_ranges_detail {
// The regions' check once the process and this thread are learned.
// kNoCall: without glibc's __curbrk the heap is not checked (sbrk(0) would be
// a call).
template <bool kNoCall>
[[gnu::always_inline]] inline bool in_known_regions(const void* p, const ThreadStack& s) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  // live stack first (the commonest small buffer): from the stack pointer to
  // the top is mapped stack of this thread; a stack pointer outside the
  // thread's bounds (coroutine, signal stack) proves nothing
  const uintptr_t sp = stack_pointer();
  if (a >= sp && a < s.hi && sp >= s.lo) return true;
  // brk heap: the break only moves under malloc's lock; a stale (lower) value
  // read here only sends an address to the driver's query
  const ProcessRanges& r = g_process;
  if (a >= r.heap_lo) {
    if (&__curbrk != nullptr) {
      if (a < reinterpret_cast<uintptr_t>(__atomic_load_n(&__curbrk, __ATOMIC_RELAXED))) return true;
    } else if (!kNoCall && a < program_break_by_call()) {
      return true;
    }
  }
  for (int i = 0; i < r.segments; ++i)
    if (a >= r.seg_lo[i] && a < r.seg_hi[i]) return true;
  return in_owned(a) || mapped_host_detail::in_learned(a);
}
}  // namespace host_ranges_detail

// True if `p` lies in one of the regions above. Loads and compares, inlined
// into the callers (issue 29: every host MPI call asks), after the first call
// of the process and of each thread, which learn the heap's start, the
// executable's segments and the thread's stack.
[[gnu::always_inline]] inline bool provably_host(const void* p) {
  namespace d = host_ranges_detail;
  const d::ThreadStack& s = d::t_stack;
  if (!s.asked || !d::g_process_ready.load(std::memory_order_acquire)) return d::provably_host_first(p);
  return d::in_known_regions<false>(p, s);
}
// provably_host without any call: false also where it would call (the first
// call of the process or thread; the heap without glibc). For the exported
// functions' fast paths, which a call would give a stack frame (issue 29).
[[gnu::always_inline]] inline bool provably_host_no_call(const void* p) {
  namespace d = host_ranges_detail;
  const d::ThreadStack& s = d::t_stack;
  if (!s.asked || !d::g_process_ready.load(std::memory_order_acquire)) return false;
  return d::in_known_regions<true>(p, s);
}

// Host memory whose whole lifetime dtmpi sees (issue 29): [p, p + bytes) is
// ordinary host memory from now until drop_host_range(p), and whoever calls
// this guarantees that nothing releases it before. The interposed
// MPI_Alloc_mem adds the memory it returns (after the driver said it is not
// CUDA memory); MPI_Free_mem and PMPI_Free_mem drop it before the system MPI
// frees it, MPI_Finalize drops all. Then provably_host answers for it without
// a call, as for the heap. An entry that overlaps one already there replaces
// it (the older one was released without our seeing: it proves nothing
// now). False (nothing added): an empty or wrapping range, or a full table
// (the addresses are then asked of the driver, as before).
bool add_host_range(const void* p, size_t bytes);
// Drops the entry that starts at `p`; false if there is none.
bool drop_host_range(const void* p);
void drop_all_host_ranges();
int host_range_count();

// What provably_host knows, for tests and dtmpi-info.
struct HostRanges {
  uintptr_t heap_lo = 0, heap_hi = 0;    // heap_hi: sbrk(0) now
  uintptr_t stack_lo = 0, stack_hi = 0;  // the calling thread's stack (0, 0: unknown)
  int image_segments = 0;                // loaded segments of the main executable
};
HostRanges host_ranges();

}  // namespace dtmpi::runtime
