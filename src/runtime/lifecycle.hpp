// What happens around MPI_Init and MPI_Finalize: logging rank, the one-time
// report of unknown DTMPI_* variables, the counters printed at the end.
#pragma once

namespace dtmpi::runtime {

void on_mpi_initialized();
void on_mpi_finalizing();
// False when DTMPI_DISABLE=1: the interposer then forwards everything.
bool active();

}  // namespace dtmpi::runtime
