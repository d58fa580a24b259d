// The dtmpi_* C API of include/dtmpi/dtmpi.h.
#include "dtmpi/dtmpi.h"

#include <string>

#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/stats.hpp"

DTMPI_EXPORT const char* dtmpi_version(void) { return DTMPI_VERSION; }

DTMPI_EXPORT int dtmpi_active(void) { return dtmpi::runtime::active() ? 1 : 0; }

DTMPI_EXPORT const char* dtmpi_stats(void) {
  thread_local std::string text;
  text = dtmpi::runtime::format_stats();
  return text.c_str();
}
