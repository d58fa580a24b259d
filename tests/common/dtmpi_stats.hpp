// A counter out of dtmpi_stats() (tests whose binaries link dtmpi).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dtmpi/dtmpi.h"

namespace dtmpi::testing {

// The number after `key` in dtmpi_stats(), 0 if absent.
inline uint64_t stat_value(const char* key) {
  const std::string s = dtmpi_stats();
  const auto at = s.find(key);
  return at == std::string::npos ? 0 : std::strtoull(s.c_str() + at + std::strlen(key), nullptr, 10);
}

}  // namespace dtmpi::testing
