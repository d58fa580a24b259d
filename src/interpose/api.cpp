// The dtmpi_* C API of include/dtmpi/dtmpi.h.
#include "dtmpi/dtmpi.h"

#include <string>

#include "base/footprint.hpp"
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/stats.hpp"

DTMPI_EXPORT const char* dtmpi_version(void) { return DTMPI_VERSION; }

DTMPI_EXPORT int dtmpi_active(void) { return dtmpi::runtime::active() ? 1 : 0; }

DTMPI_EXPORT int dtmpi_initialized(void) { return dtmpi::runtime::initialized() ? 1 : 0; }

DTMPI_EXPORT const char* dtmpi_stats(void) {
  thread_local std::string text;
  text = dtmpi::runtime::format_stats();
  return text.c_str();
}

DTMPI_EXPORT long long dtmpi_memory_bytes(int ranks) {
  return dtmpi::footprint::total_bytes(dtmpi::footprint::parts(), ranks);
}

DTMPI_EXPORT const char* dtmpi_memory(void) {
  thread_local std::string text;
  text = dtmpi::footprint::describe();
  return text.c_str();
}
