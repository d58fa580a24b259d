#include "base/trace.hpp"

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

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

const char* prefix() {
  static const char* p = std::getenv("DTMPI_TRACE");
  return p && *p ? p : nullptr;
}

bool initially_enabled() { return prefix() != nullptr; }

}  // namespace

std::atomic<bool> g_enabled{initially_enabled()};

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

}  // namespace dtmpi::trace
