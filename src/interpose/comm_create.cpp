// The communicator constructors: the system MPI creates the communicator,
// then -- every member being in the call -- dtmpi's collective state for it
// is made collectively (coll::prepare; issue 22's "a tuner state per
// communicator, created at MPI_Comm_split/dup/create"), so that its
// non-blocking collectives are dtmpi's from the first one on. Nothing else
// changes: the handle, its ranks and its errors are the system MPI's (a
// failed creation returns its code; the error handler already ran).
#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "interpose/export.hpp"

namespace {

int created(int rc, const MPI_Comm* out) {
  if (rc == MPI_SUCCESS && out) dtmpi::coll::prepare(*out);
  return rc;
}

}  // namespace

DTMPI_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return created(REAL(MPI_Comm_dup)(comm, newcomm), newcomm);
}

DTMPI_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  return created(REAL(MPI_Comm_dup_with_info)(comm, info, newcomm), newcomm);
}

DTMPI_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return created(REAL(MPI_Comm_split)(comm, color, key, newcomm), newcomm);
}

DTMPI_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  return created(REAL(MPI_Comm_split_type)(comm, split_type, key, info, newcomm), newcomm);
}

DTMPI_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return created(REAL(MPI_Comm_create)(comm, group, newcomm), newcomm);
}

DTMPI_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  return created(REAL(MPI_Comm_create_group)(comm, group, tag, newcomm), newcomm);
}
