// The deterministic-reduction communicator attribute (coll/deterministic.hpp,
// include/dtmpi/dtmpi.h): dtmpi_reduction_keyval(), and the interposed
// MPI_Comm_set_attr that counts its deterministic values (so that a reduction
// on a communicator without one pays a single load).
#include "coll/deterministic.hpp"
#include "dtmpi/dtmpi.h"
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"

DTMPI_EXPORT int dtmpi_reduction_keyval(void) { return dtmpi::coll::reduction_keyval(); }

DTMPI_EXPORT int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void* value) {
  // a value replaced is dropped first (the keyval's delete callback)
  const dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Comm_set_attr)(comm, keyval, value));
  if (s && keyval != MPI_KEYVAL_INVALID && keyval == dtmpi::coll::reduction_keyval() && dtmpi::runtime::active())
    dtmpi::coll::note_reduction_attr_set(value);
  return dtmpi::interpose::result(comm, s);
}
