#include "runtime/stats.hpp"

#include <cstdio>

namespace dtmpi::runtime {

Stats& stats() {
  static Stats s;
  return s;
}

std::string format_stats() {
  const Stats& s = stats();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "types planned %llu, left to MPI %llu; MPI_Pack %llu, MPI_Unpack %llu by dtmpi "
                "(%llu bytes), %llu passed through",
                static_cast<unsigned long long>(s.types_planned.load()),
                static_cast<unsigned long long>(s.types_unplanned.load()),
                static_cast<unsigned long long>(s.packs.load()),
                static_cast<unsigned long long>(s.unpacks.load()),
                static_cast<unsigned long long>(s.packed_bytes.load()),
                static_cast<unsigned long long>(s.forwarded.load()));
  return buf;
}

}  // namespace dtmpi::runtime
