#include "base/log.hpp"

#include <cstdio>

namespace dtmpi::log {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
static std::atomic<int> g_rank{-1};

void set_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

void write(Level level, const char* fmt, ...) {
  static const char* const kNames[] = {"error", "warn", "info", "debug"};
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int rank = g_rank.load(std::memory_order_relaxed);
  if (rank >= 0)
    std::fprintf(stderr, "[dtmpi %s rank %d] %s\n", kNames[static_cast<int>(level)], rank, msg);
  else
    std::fprintf(stderr, "[dtmpi %s] %s\n", kNames[static_cast<int>(level)], msg);
}

}  // namespace dtmpi::log
