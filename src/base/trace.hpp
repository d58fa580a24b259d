// Timestamped trace points for finding where the time of a transfer goes
// (DTMPI_TRACE=<path prefix>). Each process keeps the last 64Ki points in a
// ring (a steady-clock nanosecond stamp and a static label) and writes them to
// <prefix>.<world rank>.txt at MPI_Finalize (or on SIGUSR1, for hung runs); tools/trace_timeline.py merges
// the files of one node (the clock is the node's CLOCK_MONOTONIC). When the
// variable is unset a trace point costs one relaxed load.
#pragma once
#include <atomic>

namespace dtmpi::trace {

extern std::atomic<bool> g_enabled __attribute__((visibility("hidden")));
// Turns tracing on with files at `path_prefix` (empty or null: off); called
// by the configuration, which reads DTMPI_TRACE.
void configure(const char* path_prefix);
void point(const char* label);
// Writes the ring to the file of `rank` (no-op when tracing is off).
void dump(int rank);
// A hung process's ring: with tracing on, SIGUSR1 writes it to the file of
// `rank` (as MPI_Finalize would), so `kill -USR1` shows where each rank stopped.
void dump_on_signal(int rank);

}  // namespace dtmpi::trace

#define DTMPI_TRACE(label)                                                  \
  do {                                                                      \
    if (::dtmpi::trace::g_enabled.load(std::memory_order_relaxed))          \
      ::dtmpi::trace::point(label);                                         \
  } while (0)
