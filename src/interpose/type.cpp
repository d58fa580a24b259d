// Datatype lifetime: committed types are noted at commit (their plans are
// built at first use) and dropped at free.
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/real_mpi.hpp"
#include "type/registry.hpp"

namespace rt = dtmpi::runtime;

DTMPI_EXPORT int MPI_Type_commit(MPI_Datatype* type) {
  int rc = REAL(MPI_Type_commit)(type);
  if (rc == MPI_SUCCESS && rt::active()) dtmpi::type::note_commit(*type);
  return rc;
}

DTMPI_EXPORT int MPI_Type_free(MPI_Datatype* type) {
  MPI_Datatype t = type ? *type : MPI_DATATYPE_NULL;
  int rc = REAL(MPI_Type_free)(type);
  if (rc == MPI_SUCCESS && rt::active()) dtmpi::type::forget_freed(t);
  return rc;
}

DTMPI_EXPORT int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  int rc = REAL(MPI_Type_dup)(oldtype, newtype);
  if (rc == MPI_SUCCESS && rt::active()) dtmpi::type::share_plan(oldtype, *newtype);
  return rc;
}
