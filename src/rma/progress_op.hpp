// The engine operation that progresses dtmpi's windows: while any exists, it
// runs rma::progress() whenever dtmpi's engine does -- at the entry of every
// interposed call and inside the MPI_Wait* loops, which a busy engine turns
// into progress + MPI_Test* -- so a target serves its peers' requests from
// inside the MPI calls it makes anyway.
#pragma once

namespace dtmpi::rma {

void start_progress_op();
// MPI_Finalize: windows the application never freed no longer keep the
// engine busy.
void stop_progress_op();

}  // namespace dtmpi::rma
