// runtime/mapped_host.hpp: the mapping watch (perf rings), the learned
// mappings (a seqlock table) and the reading of /proc/self/maps.
#include "runtime/mapped_host.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace dtmpi::runtime {

namespace mapped_host_detail {
Rings g_rings;
Learned g_learned;
}  // namespace mapped_host_detail

namespace {

using mapped_host_detail::g_learned;
using mapped_host_detail::g_rings;
using mapped_host_detail::kMaxLearned;
using mapped_host_detail::kMaxRings;

// More events than this (CPUs x threads present at the start), or than a
// quarter of the process's file-descriptor limit, and the watch stays off:
// each is a file descriptor and a context-switch cost.
constexpr long kMaxEvents = 256;
long event_budget() {
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) != 0 || fds.rlim_cur == RLIM_INFINITY) return kMaxEvents;
  return std::min<long>(kMaxEvents, static_cast<long>(fds.rlim_cur / 4));
}
// What one driver pointer query costs (measured 60-150 ns on the H100:
// bench/results/pointer-classification-*): the unit of the ski-rental rule.
constexpr int64_t kDriverQueryNs = 100;

struct WatchState {
  std::mutex mu;
  bool started = false;
  bool on = false;
  int events = 0;
  std::string why_off = "not started (DTMPI_HOST_MAPS=off, no NVIDIA driver, or before MPI_Init)";
  std::vector<int> fds;
  std::vector<void*> rings;  // one mapping per CPU
  // the ski-rental rule: learn once the queries since the last read of
  // /proc/self/maps cost as much as that read did
  std::atomic<int64_t> queries_since_learn{0};
  std::atomic<int64_t> last_learn_ns{0};
  std::atomic<uint64_t> learns{0};
};

WatchState& state() {
  static auto* s = new WatchState;  // never destroyed: classification may run in static destructors
  return *s;
}

std::mutex& learn_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

long page_size() { return sysconf(_SC_PAGESIZE); }

int open_event(pid_t tid, int cpu) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.size = sizeof a;
  a.mmap = 1;       // PERF_RECORD_MMAP for executable mappings ...
  a.mmap_data = 1;  // ... and for every other one
  a.inherit = 1;    // threads (and processes) the task creates later
  a.exclude_kernel = 1;  // allowed at perf_event_paranoid 2
  a.exclude_hv = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

// The process's threads now (opendir may allocate: harmless, nothing is
// watched yet).
std::set<pid_t> threads_now() {
  std::set<pid_t> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.insert(static_cast<pid_t>(std::atol(e->d_name)));
    closedir(d);
  }
  return tids;
}

void close_all(WatchState& s) {
  for (void* ring : s.rings) munmap(ring, static_cast<size_t>(2 * page_size()));
  for (int fd : s.fds) close(fd);
  s.rings.clear();
  s.fds.clear();
}

// The CPUs a thread may ever run on (/sys/devices/system/cpu/possible, a
// list such as "0-3,8-11"): ids, not a count -- an event per id. Empty where
// it cannot be read.
std::vector<int> possible_cpus() {
  std::vector<int> ids;
  const int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ids;
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return ids;
  buf[n] = 0;
  for (char* p = buf; *p && *p != '\n';) {
    char* end = nullptr;
    const long lo = std::strtol(p, &end, 10);
    if (end == p) return {};
    long hi = lo;
    p = end;
    if (*p == '-') {
      hi = std::strtol(p + 1, &end, 10);
      if (end == p + 1) return {};
      p = end;
    }
    for (long c = lo; c <= hi && ids.size() <= static_cast<size_t>(kMaxRings); ++c) ids.push_back(static_cast<int>(c));
    if (*p == ',') ++p;
  }
  return ids;
}

// Opens the events, under s.mu. Returns the reason it cannot, or "".
std::string open_watch(WatchState& s) {
#if !defined(__x86_64__)
  return "measured on x86-64 only (what the CUDA driver's mappings look like elsewhere is not)";
#endif
  const std::vector<int> cpu_ids = possible_cpus();
  const long cpus = static_cast<long>(cpu_ids.size());
  if (cpus == 0) return "the possible CPUs are unknown (/sys/devices/system/cpu/possible)";
  if (cpus > kMaxRings)
    return "more than " + std::to_string(kMaxRings) + " possible CPUs: summing their rings would cost what the driver's query does";
  std::vector<int> ring_fd(static_cast<size_t>(cpus), -1);
  std::vector<const uint64_t*> heads(static_cast<size_t>(cpus), nullptr);
  std::set<pid_t> covered;
  // Threads created while we open are found by the next listing; once a
  // listing finds none new, every thread is covered and every later one is
  // created by a covered thread (inherit). A thread in the middle of creating
  // one when its events were opened may have a child that inherited nothing
  // and is not listed yet: where other threads exist, the empty listing is
  // repeated 2 ms later (with this thread alone -- MPI_Init's usual case --
  // nobody else is creating one, and the proof is exact). What remains: a
  // clone() stalled for those 2 ms between copying its parent's events and
  // joining the thread list.
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  bool settled_once = false;
  for (int round = 0; round < 16; ++round) {
    std::set<pid_t> fresh;
    for (pid_t t : threads_now())
      if (!covered.count(t)) fresh.insert(t);
    if (fresh.empty()) {
      const bool alone = covered.size() == 1;
      if (!alone && !settled_once) {
        settled_once = true;
        usleep(2000);
        continue;
      }
      if (!covered.count(self)) return "the process's threads could not be listed (/proc/self/task)";
      for (long c = 0; c < cpus; ++c)
        if (!heads[static_cast<size_t>(c)]) return "a CPU's ring could not be made";
      for (long c = 0; c < cpus; ++c) g_rings.head[c] = heads[static_cast<size_t>(c)];
      g_rings.count.store(static_cast<int>(cpus), std::memory_order_release);
      s.events = static_cast<int>(s.fds.size());
      return "";
    }
    settled_once = false;
    for (pid_t tid : fresh) {
      if (static_cast<long>(s.fds.size()) + cpus > event_budget())
        return "more than " + std::to_string(event_budget()) +
               " perf events needed (CPUs x threads present when watching began; at most 256, a quarter of RLIMIT_NOFILE)";
      for (long c = 0; c < cpus; ++c) {
        const int fd = open_event(tid, cpu_ids[static_cast<size_t>(c)]);
        if (fd < 0) {
          if (errno == ESRCH) break;  // the thread ended: nothing of it to watch
          return std::string("perf_event_open refused (") + std::strerror(errno) +
                 "): kernel.perf_event_paranoid above 2, no CAP_PERFMON, a seccomp filter, or an offline CPU";
        }
        s.fds.push_back(fd);
        auto& ring = ring_fd[static_cast<size_t>(c)];
        if (ring < 0) {
          // read-only: the kernel overwrites old records and data_head keeps
          // growing (a header page and one data page)
          void* page = mmap(nullptr, static_cast<size_t>(2 * page_size()), PROT_READ, MAP_SHARED, fd, 0);
          if (page == MAP_FAILED) return std::string("mapping a perf ring failed (") + std::strerror(errno) + ")";
          s.rings.push_back(page);
          ring = fd;
          heads[static_cast<size_t>(c)] =
              reinterpret_cast<const uint64_t*>(&static_cast<perf_event_mmap_page*>(page)->data_head);
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring) != 0) {
          return std::string("sharing a perf ring failed (") + std::strerror(errno) + ")";
        }
      }
      covered.insert(tid);
    }
  }
  return "threads kept appearing while the events were opened";
}

template <class F>
void change_learned(F&& f) {
  seqlock::write(g_learned.seq, std::forward<F>(f));
}

uintptr_t parse_hex(std::string_view& s) {
  uintptr_t v = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else break;
    v = v * 16 + static_cast<uintptr_t>(d);
  }
  s.remove_prefix(i);
  return v;
}

std::string_view next_field(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  size_t n = 0;
  while (n < s.size() && s[n] != ' ') ++n;
  std::string_view f = s.substr(0, n);
  s.remove_prefix(n);
  return f;
}

// Finds the line of /proc/self/maps whose range holds `a`, reading with
// read(2) into a stack buffer: nothing here maps memory (a mapping made by
// the reading itself would make what it learns stale at once).
bool find_mapping(uintptr_t a, MapsLine& found) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[8192];
  size_t have = 0;
  bool done = false, hit = false;
  while (!done && !hit) {
    const ssize_t n = read(fd, buf + have, sizeof buf - have);
    if (n <= 0) done = true;
    else have += static_cast<size_t>(n);
    size_t start = 0;
    for (size_t i = 0; i < have; ++i) {
      if (buf[i] != '\n') continue;
      MapsLine line;
      if (parse_maps_line(std::string_view(buf + start, i - start), line) && a >= line.lo && a < line.hi) {
        found = line;
        hit = true;
        break;
      }
      start = i + 1;
    }
    if (hit) break;
    if (start == 0 && have == sizeof buf) break;  // a line longer than the buffer: give up
    std::memmove(buf, buf + start, have - start);
    have -= start;
  }
  close(fd);
  return hit;
}

}  // namespace

bool parse_maps_line(std::string_view line, MapsLine& out) {
  // "lo-hi perms offset dev inode [path]"
  std::string_view s = line;
  out = MapsLine{};
  out.lo = parse_hex(s);
  if (s.empty() || s.front() != '-') return false;
  s.remove_prefix(1);
  out.hi = parse_hex(s);
  if (out.hi <= out.lo) return false;
  const std::string_view perms = next_field(s);
  if (perms.size() < 4) return false;
  next_field(s);  // offset
  next_field(s);  // device
  const std::string_view inode = next_field(s);
  if (inode.empty()) return false;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const std::string_view path = s;
  const bool private_rw = perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p';
  // anonymous: no file (inode 0) and no path, or a bracketed kernel name
  // ([heap], [stack], [anon:...]); a file or a device node is not ours to judge
  const bool anonymous = inode == "0" && (path.empty() || path.front() == '[');
  out.ordinary_host = private_rw && anonymous;
  return true;
}

std::atomic<bool> g_mremap_seen{false};

void set_mremap_seen(bool seen) { g_mremap_seen.store(seen, std::memory_order_release); }

void note_unrecorded_mapping_change() { g_rings.unrecorded.fetch_add(1, std::memory_order_acq_rel); }

bool mremap_seen() { return g_mremap_seen.load(std::memory_order_acquire); }

uint64_t mremap_count() { return g_rings.unrecorded.load(std::memory_order_acquire); }

void stop_mapping_watch(const char* why) {
  std::lock_guard learn(learn_mutex());
  g_rings.count.store(0, std::memory_order_release);
  change_learned([] { g_learned.count.store(0, std::memory_order_relaxed); });
  WatchState& s = state();
  std::lock_guard lock(s.mu);
  s.started = true;  // never again in this process
  s.on = false;
  s.why_off = why;
}

std::atomic<bool> g_forked_child{false};

// A child of fork() has the rings' addresses but not the rings (the kernel
// does not copy them): the watch ends there, and nothing learned is trusted.
// Single-threaded and async-signal-safe: stores only.
void forked_child() {
  g_rings.count.store(0, std::memory_order_relaxed);
  g_learned.count.store(0, std::memory_order_relaxed);
  g_forked_child.store(true, std::memory_order_relaxed);
}

bool start_mapping_watch(bool require_mremap_seen) {
  WatchState& s = state();
  std::lock_guard lock(s.mu);
  if (s.started) return s.on;
  if (require_mremap_seen && !g_mremap_seen.load(std::memory_order_acquire)) {
    // not `started`: a later call that needs no interposer may still start it
    s.why_off = "dtmpi's mremap is not the process's (dtmpi is not ahead of the C library in symbol lookup), so "
                "the CUDA driver's mremap calls would go unseen";
    return false;
  }
  s.started = true;
  std::string why = open_watch(s);
  if (!why.empty()) {
    g_rings.count.store(0, std::memory_order_release);
    close_all(s);
    s.why_off = why;
    return false;
  }
  s.on = true;
  s.why_off.clear();
  pthread_atfork(nullptr, nullptr, forked_child);
  return true;
}

MappingWatch mapping_watch() {
  WatchState& s = state();
  std::lock_guard lock(s.mu);
  MappingWatch w;
  w.on = s.on;
  w.rings = g_rings.count.load(std::memory_order_acquire);
  w.events = s.events;
  w.learned = g_learned.count.load(std::memory_order_relaxed);
  w.learns = s.learns.load(std::memory_order_relaxed);
  w.last_learn_ns = s.last_learn_ns.load(std::memory_order_relaxed);
  w.unrecorded = g_rings.unrecorded.load(std::memory_order_relaxed);
  w.why_off = s.why_off;
  if (g_forked_child.load(std::memory_order_relaxed)) {
    w.on = false;
    w.rings = 0;
    w.why_off = "a child of fork(): the kernel does not copy the rings";
  }
  return w;
}

bool learn_mapping_now(const void* p) {
  if (g_rings.count.load(std::memory_order_acquire) == 0) return false;  // not watching
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(learn_mutex());
  // the generation before the read: a mapping made during it makes the entry stale
  const uint64_t generation = mapped_host_detail::generation_now();
  MapsLine line;
  const bool ordinary = find_mapping(a, line) && line.ordinary_host;
  state().learns.fetch_add(1, std::memory_order_relaxed);
  change_learned([&] {
    int n = g_learned.count.load(std::memory_order_relaxed);
    if (g_learned.generation.load(std::memory_order_relaxed) != generation) n = 0;  // all stale
    g_learned.generation.store(generation, std::memory_order_relaxed);
    if (ordinary) {
      // drop entries the new one overlaps (a mapping merged or split since)
      for (int i = n - 1; i >= 0; --i)
        if (g_learned.lo[i].load(std::memory_order_relaxed) < line.hi &&
            line.lo < g_learned.hi[i].load(std::memory_order_relaxed)) {
          g_learned.lo[i].store(g_learned.lo[n - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
          g_learned.hi[i].store(g_learned.hi[n - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
          --n;
        }
      // a full table forgets its oldest entry (slot 0; the others move down)
      if (n == kMaxLearned) {
        for (int i = 1; i < n; ++i) {
          g_learned.lo[i - 1].store(g_learned.lo[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
          g_learned.hi[i - 1].store(g_learned.hi[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
        }
        --n;
      }
      g_learned.lo[n].store(line.lo, std::memory_order_relaxed);
      g_learned.hi[n].store(line.hi, std::memory_order_relaxed);
      ++n;
    }
    g_learned.count.store(n, std::memory_order_relaxed);
  });
  return mapped_host_detail::in_learned(a);
}

void note_driver_host(const void* p) {
  if (g_rings.count.load(std::memory_order_relaxed) == 0) return;
  WatchState& s = state();
  const int64_t queries = s.queries_since_learn.fetch_add(1, std::memory_order_relaxed) + 1;
  if (queries * kDriverQueryNs < s.last_learn_ns.load(std::memory_order_relaxed)) return;
  s.queries_since_learn.store(0, std::memory_order_relaxed);
  const auto t0 = std::chrono::steady_clock::now();
  learn_mapping_now(p);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  s.last_learn_ns.store(static_cast<int64_t>(ns), std::memory_order_relaxed);
}

void forget_learned_mappings() {
  std::lock_guard lock(learn_mutex());
  change_learned([] { g_learned.count.store(0, std::memory_order_relaxed); });
}

}  // namespace dtmpi::runtime
