// What happens around MPI_Init and MPI_Finalize: logging rank, the one-time
// report of unknown DTMPI_* variables, the counters printed at the end.
#pragma once

namespace dtmpi::runtime {

// At MPI_Init's entry, before the system MPI's: starts the mapping watch
// (runtime/mapped_host.hpp) where DTMPI_HOST_MAPS and the machine allow.
void before_mpi_init();
void on_mpi_initialized();
void on_mpi_finalizing();
// False when DTMPI_DISABLE=1: the interposer then forwards everything.
bool active();
// True between on_mpi_initialized() and on_mpi_finalizing() of this copy of
// the runtime: dtmpi's MPI_Init ran (active) and its MPI_Finalize has not, so
// the MPI_* symbols of the process are dtmpi's and take device buffers. A
// library linked beside libdtmpi (its own copy of the runtime, as
// dtmpi::stencil in an application) asks libdtmpi's copy through the
// exported dtmpi_initialized() instead.
bool initialized();

}  // namespace dtmpi::runtime
