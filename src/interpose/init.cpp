// MPI_Init / MPI_Init_thread / MPI_Finalize.
#include "base/log.hpp"
#include "coll/coll.hpp"
#include "coll/deterministic.hpp"
#include "interpose/boundary.hpp"
#include "interpose/coll_staging.hpp"
#include "interpose/export.hpp"
#include "rma/progress_op.hpp"
#include "runtime/host_ranges.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/mapped_host.hpp"
#include "topology/placement.hpp"
#include "transport/ipc.hpp"
#include "base/system_mpi.hpp"
#include "transport/ledger.hpp"
#include "transport/engine.hpp"
#include "transport/peers.hpp"

namespace dtmpi::interpose {
void create_buffer_keyval();       // interpose/buffer_attr.cpp
bool mremap_calls_reach_dtmpi();   // interpose/memory_maps.cpp
}

namespace {

void initialized() {
  dtmpi::runtime::on_mpi_initialized();
  // before anything cuts nodes: one DTMPI_RANKS_PER_NODE for every rank
  if (auto agreed = dtmpi::topology::agree_ranks_per_node(MPI_COMM_WORLD); !agreed)
    DTMPI_LOG(kWarn, "agreeing on DTMPI_RANKS_PER_NODE failed (%s): each rank keeps its own",
              agreed.error().what.c_str());
  dtmpi::interpose::create_buffer_keyval();
  if (auto keyval = dtmpi::coll::create_reduction_keyval(); !keyval)
    DTMPI_LOG(kWarn, "creating dtmpi_reduction_keyval() failed (%s): no deterministic reductions",
              keyval.error().what.c_str());
  if (auto tuning = dtmpi::coll::init_tuning(MPI_COMM_WORLD); !tuning)
    DTMPI_LOG(kWarn, "reading dtmpi-tune's table failed (%s): DTMPI_COLL=tuned is the built-in choice",
              tuning.error().what.c_str());
  if (auto set_up = dtmpi::transport::init_peers(); !set_up)
    DTMPI_LOG(kError, "setting up dtmpi's private communicator failed (%s, code %d): GPU transfers use one message",
              set_up.error().what.c_str(), set_up.error().code);
  // MPI_COMM_WORLD's collective state while every rank is here, as the
  // communicator constructors do for theirs (interpose/comm_create.cpp): a
  // program whose first collective is non-blocking gets dtmpi's algorithms
  // from that one on (only where DTMPI_COLL names them)
  dtmpi::coll::prepare(MPI_COMM_WORLD);
  // the system MPI's libraries may have rewritten mremap calls past dtmpi's
  // (UCX's memory hooks): the mapping watch cannot count them then
  if (!dtmpi::interpose::mremap_calls_reach_dtmpi()) {
    dtmpi::runtime::set_mremap_seen(false);
    dtmpi::runtime::stop_mapping_watch(
        "mremap calls no longer reach dtmpi's after MPI_Init (UCX's memory hooks rewrite them), so the CUDA "
        "driver's would go uncounted");
  }
}

}  // namespace

DTMPI_EXPORT int MPI_Init(int* argc, char*** argv) {
  if (dtmpi::runtime::active()) dtmpi::runtime::before_mpi_init();
  dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Init)(argc, argv));
  if (s && dtmpi::runtime::active()) initialized();
  return dtmpi::interpose::result(s);
}

DTMPI_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  // Everything dtmpi keeps (plan cache, counters) is thread-safe, so any level
  // the system MPI grants is passed on unchanged.
  if (dtmpi::runtime::active()) dtmpi::runtime::before_mpi_init();
  dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Init_thread)(argc, argv, required, provided));
  if (s && dtmpi::runtime::active()) initialized();
  return dtmpi::interpose::result(s);
}

DTMPI_EXPORT int MPI_Finalize() {
  if (dtmpi::runtime::active()) {
    // windows the application did not free no longer keep the engine busy
    dtmpi::rma::stop_progress_op();
    // transfers still in flight (sends the application no longer waits for)
    dtmpi::transport::ledger::drain();
    dtmpi::interpose::free_packed_types();
    dtmpi::transport::ipc_close_all();
    dtmpi::transport::finalize_peers();
    dtmpi::runtime::on_mpi_finalizing();
  }
  // the system MPI may release MPI_Alloc_mem's memory it was not given back:
  // no address of it stays proven host (runtime/host_ranges.hpp)
  dtmpi::runtime::drop_all_host_ranges();
  return REAL(MPI_Finalize)();
}
