// Datatype lifetime: committed types are noted at commit (their plans are
// built at first use) and dropped at free.
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"
#include "type/registry.hpp"

namespace rt = dtmpi::runtime;

DTMPI_EXPORT int MPI_Type_commit(MPI_Datatype* type) {
  dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Type_commit)(type));
  if (s && rt::active()) dtmpi::type::note_commit(*type);
  return dtmpi::interpose::result(s);
}

// The plan goes before the handle: once the system MPI freed it, another
// thread may get the same handle value for a new type and commit it, and a
// forget after the free dropped that type's plan (its GPU buffers then had
// no plan; issue 20). Freeing a type that is not freeable fails in the system
// MPI after this; its plan is then rebuilt on demand (plan_for) or the call
// goes to the system MPI, both correct.
DTMPI_EXPORT int MPI_Type_free(MPI_Datatype* type) {
  if (type && rt::active()) dtmpi::type::forget_plan(*type);
  return REAL(MPI_Type_free)(type);
}

DTMPI_EXPORT int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Type_dup)(oldtype, newtype));
  if (s && rt::active()) dtmpi::type::share_plan(oldtype, *newtype);
  return dtmpi::interpose::result(s);
}
