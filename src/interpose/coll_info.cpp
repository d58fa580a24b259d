// dtmpi_coll_leaders (include/dtmpi/dtmpi.h): what coll/hierarchy.hpp made of
// a communicator, for programs and tests to see its leaders.
#include <mpi.h>

#include <algorithm>

#include "coll/hierarchy.hpp"
#include "dtmpi/dtmpi.h"
#include "interpose/export.hpp"

DTMPI_EXPORT int dtmpi_coll_leaders(MPI_Comm comm, int max, int* leaders) {
  if (comm == MPI_COMM_NULL) return 0;
  const std::vector<int> all = dtmpi::coll::hierarchy_leaders(comm);
  if (leaders && max > 0) std::copy_n(all.begin(), std::min<size_t>(all.size(), static_cast<size_t>(max)), leaders);
  return static_cast<int>(all.size());
}
