#include "base/trace.hpp"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "base/footprint.hpp"

namespace dtmpi::trace {

namespace {

struct Entry {
  long long ns;
  const char* label;
};
constexpr size_t kRing = size_t{1} << 16;
Entry g_ring[kRing];
size_t g_next = 0;  // total points written
std::mutex g_mutex;  // MPI_THREAD_MULTIPLE programs may trace from several threads

// Set by the configuration (runtime/config.cpp reads DTMPI_TRACE).
char g_prefix[4096] = {};

const char* prefix() { return g_prefix[0] ? g_prefix : nullptr; }

// The ring is zero-initialized static storage: its pages are memory only once written.
void report_footprint(std::vector<footprint::Part>& out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  out.push_back({"trace ring", "fixed", static_cast<int64_t>((g_next < kRing ? g_next : kRing) * sizeof(Entry)), 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

}  // namespace

std::atomic<bool> g_enabled{false};

void configure(const char* path_prefix) {
  std::snprintf(g_prefix, sizeof g_prefix, "%s", path_prefix ? path_prefix : "");
  g_enabled.store(g_prefix[0] != 0, std::memory_order_relaxed);
}

void point(const char* label) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_ring[g_next % kRing] = Entry{ts.tv_sec * 1000000000LL + ts.tv_nsec, label};
  ++g_next;
}

void dump(int rank) {
  if (!g_enabled.load() || !prefix()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string path = std::string(prefix()) + "." + std::to_string(rank) + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  const size_t first = g_next > kRing ? g_next - kRing : 0;
  for (size_t i = first; i < g_next; ++i) std::fprintf(f, "%lld %d %s\n", g_ring[i % kRing].ns, rank, g_ring[i % kRing].label);
  std::fclose(f);
}

namespace {

int g_signal_rank = 0;

// Appends the decimal digits of v (v >= 0) at p; returns the end.
char* put_number(char* p, long long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 24);
  while (n > 0) *p++ = digits[--n];
  return p;
}

// The signal handler: open/write/close only (async-signal-safe), no lock --
// the threads of a hung process sit in waits, not in point(); a point being
// written meanwhile shows as one torn line at worst.
void on_sigusr1(int) {
  const char* pre = prefix();
  if (!pre) return;
  char path[4096];
  char* p = path;
  for (const char* c = pre; *c && p < path + sizeof path - 32; ++c) *p++ = *c;
  *p++ = '.';
  p = put_number(p, g_signal_rank);
  for (const char* c = ".txt"; *c; ++c) *p++ = *c;
  *p = '\0';
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  const size_t end = g_next, first = end > kRing ? end - kRing : 0;
  for (size_t i = first; i < end; ++i) {
    const Entry& e = g_ring[i % kRing];
    char line[512];
    char* q = put_number(line, e.ns);
    *q++ = ' ';
    q = put_number(q, g_signal_rank);
    *q++ = ' ';
    for (const char* c = e.label; c && *c && q < line + sizeof line - 2; ++c) *q++ = *c;
    *q++ = '\n';
    if (::write(fd, line, static_cast<size_t>(q - line)) < 0) break;
  }
  ::close(fd);
}

}  // namespace

void dump_on_signal(int rank) {
  if (!g_enabled.load() || !prefix()) return;
  g_signal_rank = rank;
  struct sigaction sa = {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace dtmpi::trace
