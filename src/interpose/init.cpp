// MPI_Init / MPI_Init_thread / MPI_Finalize.
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/real_mpi.hpp"

DTMPI_EXPORT int MPI_Init(int* argc, char*** argv) {
  int rc = REAL(MPI_Init)(argc, argv);
  if (rc == MPI_SUCCESS && dtmpi::runtime::active()) dtmpi::runtime::on_mpi_initialized();
  return rc;
}

DTMPI_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  // Everything dtmpi keeps (plan cache, counters) is thread-safe, so any level
  // the system MPI grants is passed on unchanged.
  int rc = REAL(MPI_Init_thread)(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && dtmpi::runtime::active()) dtmpi::runtime::on_mpi_initialized();
  return rc;
}

DTMPI_EXPORT int MPI_Finalize() {
  if (dtmpi::runtime::active()) dtmpi::runtime::on_mpi_finalizing();
  return REAL(MPI_Finalize)();
}
