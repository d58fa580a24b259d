// Minimal leveled logging to stderr, prefixed with the process's MPI rank when
// known. Level comes from DTMPI_LOG (error|warn|info|debug); the check is one
// relaxed load so disabled logging costs nothing on hot paths.
#pragma once
#include <atomic>
#include <cstdarg>

namespace dtmpi::log {

enum class Level : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

extern std::atomic<int> g_level;
void set_rank(int rank);
void write(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

inline bool enabled(Level level) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

}  // namespace dtmpi::log

#define DTMPI_LOG(level, ...)                                               \
  do {                                                                      \
    if (::dtmpi::log::enabled(::dtmpi::log::Level::level))                  \
      ::dtmpi::log::write(::dtmpi::log::Level::level, __VA_ARGS__);         \
  } while (0)
