// Ordinary host mappings (mmap'd memory: large malloc blocks, NumPy arrays,
// other threads' arenas) proven host without a driver call (issue 29), for as
// long as the kernel records no new mapping in the process.
//
// Why it is never wrong. The CUDA driver's memory is never an ordinary
// private read-write mapping: device and IPC-mapped memory lie in PROT_NONE
// reservations ("---p"), managed memory in shared mappings of /dev/nvidia-uvm,
// pinned memory in shared mappings of /dev/zero or /dev/nvidiactl (measured on
// an H100, driver 580: bench/results/pointer-classification-*). An address in
// a private read-write anonymous mapping is therefore host memory, and stays
// so until the mapping is replaced -- by a new mapping (mmap, MAP_FIXED,
// shmat), never by the driver suballocating its own reservations. Every new
// mapping of every thread is counted by the kernel: one software perf event
// per CPU with `inherit` (threads created later are covered) and per thread
// that existed when watching began, each event writing PERF_RECORD_MMAP into
// a read-only ring whose `data_head` only grows. The sum of the rings' heads
// is the generation: a mapping learned at generation g is trusted while the
// sum is still g. Unmaps are not recorded (glibc unmaps unseen:
// tests/runtime/test_unmap_visibility.cpp) and need not be: an address
// unmapped and mapped again moves the generation. Not recorded by the
// kernel: mremap, which moves or grows a mapping -- and the CUDA driver
// imports it (libcuda 580). dtmpi defines mremap (interpose/memory_maps.cpp)
// and counts every call after it returns, into the generation; the watch
// only starts where that mremap is the one the process calls. glibc's
// realloc remaps its own host blocks internally (unseen, and harmless: host
// memory stays host).
//
// Mappings are learned from /proc/self/maps on the driver-query path
// (note_driver_host), at most as often as the driver queries saved pay for
// the read (a ski-rental rule: a process whose mappings keep changing pays
// at most twice what asking the driver costs). Watching needs
// perf_event_open (kernel.perf_event_paranoid <= 2, or CAP_PERFMON, and no
// seccomp filter against it); without it every such address is asked of the
// driver, as before (dtmpi-info says which).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/seqlock_ranges.hpp"

namespace dtmpi::runtime {

namespace mapped_host_detail {
constexpr int kMaxRings = 64;    // one per CPU: more CPUs and the sum costs what the driver's query does
constexpr int kMaxLearned = 16;  // mappings trusted at once (a program's few large buffers)
// The rings' heads, published once (count set last, with release). Each
// ring is its own mapping: mapped side by side (8 KiB apart) they were read
// twice as slowly on the H100 machine's CPU (15 vs 7.4 ns for 16 rings).
struct Rings {
  std::atomic<int> count{0};
  // mapping changes the kernel does not record (mremap), counted by dtmpi's
  // interposed mremap after each returns: part of the generation
  std::atomic<uint64_t> unrecorded{0};
  const uint64_t* head[kMaxRings] = {};
};
extern Rings g_rings __attribute__((visibility("hidden")));
// Learned mappings, a seqlock-guarded table (runtime/seqlock_ranges.hpp,
// as host_ranges' owned ranges), all valid at `generation` only.
struct Learned {
  std::atomic<uint32_t> seq{0};
  std::atomic<int> count{0};
  std::atomic<uint64_t> generation{0};
  std::atomic<uintptr_t> lo[kMaxLearned] = {};
  std::atomic<uintptr_t> hi[kMaxLearned] = {};
};
extern Learned g_learned __attribute__((visibility("hidden")));

// Every new mapping of the process so far (in bytes of records: only ever grows).
[[gnu::always_inline]] inline uint64_t generation_now() {
  const Rings& r = g_rings;
  const int n = r.count.load(std::memory_order_acquire);
  // relaxed loads, one fence: a head written before this check (the mapping
  // happened before it) is seen by coherence; the fence keeps the caller's
  // later loads after these
  uint64_t sum = r.unrecorded.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) sum += __atomic_load_n(r.head[i], __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_acquire);
  return sum;
}

// True if `a` lies in a learned mapping and no mapping was made since it was
// learned. False also where a writer changed the table meanwhile.
[[gnu::always_inline]] inline bool in_learned(uintptr_t a) {
  Learned& t = g_learned;
  if (t.count.load(std::memory_order_relaxed) == 0) return false;  // the common case: one load
  uint64_t learned_at = 0;
  if (!seqlock::find(t.seq, t.count, t.lo, t.hi, a,
                     [&] { learned_at = t.generation.load(std::memory_order_relaxed); }))
    return false;
  return generation_now() == learned_at;
}
}  // namespace mapped_host_detail

// Starts watching the process's new mappings (idempotent; thread-safe).
// False, with the reason in mapping_watch(), where the kernel refuses, or
// where `require_mremap_seen` and dtmpi's mremap is not the one the process
// calls (the CUDA driver imports mremap, which the kernel does not record:
// interpose/memory_maps.cpp counts each call; tests of the runtime alone,
// without the interposer, pass false).
bool start_mapping_watch(bool require_mremap_seen = true);
// Called by the interposed mremap after the system's returned (the mapping
// it moved or grew ends every learned mapping's trust), and once at load to
// say whether it is the process's mremap.
void note_unrecorded_mapping_change();
void set_mremap_seen(bool seen);
bool mremap_seen();
uint64_t mremap_count();
// Ends the watch for good (nothing learned is trusted any more), saying why:
// after MPI_Init, where the system MPI's libraries diverted mremap calls.
void stop_mapping_watch(const char* why);
struct MappingWatch {
  bool on = false;
  int rings = 0;     // per-CPU rings whose heads make the generation
  int events = 0;    // perf events opened (CPUs x threads that existed at the start)
  int learned = 0;   // mappings trusted now
  uint64_t learns = 0;  // reads of /proc/self/maps so far
  int64_t last_learn_ns = 0;  // what the last read cost (the ski-rental rule's price)
  uint64_t unrecorded = 0;    // mremap calls counted so far
  std::string why_off;  // when !on: not started, or the kernel's refusal
};
MappingWatch mapping_watch();

// The driver said `p` is not CUDA memory: learn the mapping holding it when
// the queries since the last read of /proc/self/maps paid for one. Cheap
// (one atomic add) otherwise.
void note_driver_host(const void* p);
// Reads /proc/self/maps now and trusts the mapping holding `p` if it is an
// ordinary one (tests, and note_driver_host when it is worth it). True if
// `p` is then proven host.
bool learn_mapping_now(const void* p);
void forget_learned_mappings();

// One line of /proc/self/maps: its range, and whether it is an ordinary host
// mapping -- private, readable and writable, anonymous (no path, or a
// bracketed name such as [heap], [stack], [anon:...]). Pure, for tests.
struct MapsLine {
  uintptr_t lo = 0, hi = 0;
  bool ordinary_host = false;
};
bool parse_maps_line(std::string_view line, MapsLine& out);

}  // namespace dtmpi::runtime
