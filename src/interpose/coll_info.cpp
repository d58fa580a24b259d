// dtmpi_coll_leaders (include/dtmpi/dtmpi.h): what coll/hierarchy.hpp made of
// a communicator, for programs and tests to see its leaders.
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "coll/hierarchy.hpp"
#include "dtmpi/dtmpi.h"
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"

DTMPI_EXPORT int dtmpi_coll_leaders(MPI_Comm comm, int max, int* leaders) {
  // outside MPI_Init..MPI_Finalize no MPI call may be made (and the state's
  // keyval must not be asked for before MPI_Init)
  if (comm == MPI_COMM_NULL || !dtmpi::runtime::initialized()) return 0;
  const std::vector<int> all = dtmpi::coll::hierarchy_leaders(comm);
  if (leaders && max > 0) std::copy_n(all.begin(), std::min<size_t>(all.size(), static_cast<size_t>(max)), leaders);
  return static_cast<int>(all.size());
}
