// MPI_Init / MPI_Init_thread / MPI_Finalize.
#include "base/log.hpp"
#include "interpose/export.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/gpu.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/requests.hpp"
#include "transport/engine.hpp"
#include "transport/peers.hpp"

namespace dtmpi::interpose {
void create_buffer_keyval();  // interpose/buffer_attr.cpp
}

namespace {

void initialized() {
  dtmpi::runtime::on_mpi_initialized();
  dtmpi::interpose::create_buffer_keyval();
  if (int rc = dtmpi::transport::init_peers(); rc != MPI_SUCCESS)
    DTMPI_LOG(kError, "setting up dtmpi's private communicator failed (%d): GPU transfers use one message", rc);
}

}  // namespace

DTMPI_EXPORT int MPI_Init(int* argc, char*** argv) {
  int rc = REAL(MPI_Init)(argc, argv);
  if (rc == MPI_SUCCESS && dtmpi::runtime::active()) initialized();
  return rc;
}

DTMPI_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  // Everything dtmpi keeps (plan cache, counters) is thread-safe, so any level
  // the system MPI grants is passed on unchanged.
  int rc = REAL(MPI_Init_thread)(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && dtmpi::runtime::active()) initialized();
  return rc;
}

DTMPI_EXPORT int MPI_Finalize() {
  if (dtmpi::runtime::active()) {
    // transfers still in flight (sends the application no longer waits for)
    dtmpi::transport::drain();
    while (dtmpi::runtime::any_tracked() && dtmpi::runtime::any_detached()) dtmpi::runtime::progress();
    dtmpi::runtime::ipc_close_all();
    dtmpi::transport::finalize_peers();
    dtmpi::runtime::on_mpi_finalizing();
  }
  return REAL(MPI_Finalize)();
}
