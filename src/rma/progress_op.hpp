// The engine operation that progresses dtmpi's windows: while any exists, it
// runs rma::progress() whenever dtmpi's engine does -- at the entry of every
// interposed call and inside the MPI_Wait* loops, which a busy engine turns
// into progress + MPI_Test* -- so a target serves its peers' requests from
// inside the MPI calls it makes anyway.
#pragma once

namespace dtmpi::rma {

void start_progress_op();
// Where the application runs MPI_THREAD_MULTIPLE (and DTMPI_RMA_THREAD is
// not off), a thread of dtmpi's progresses the windows while any exists: a
// target that sits in a blocking call of the system MPI dtmpi does not
// interpose (a collective on host memory) or computes still answers its
// peers' passive-target epochs (mpi4py's util.sync.Counter). Without that
// thread level, progress happens only inside MPI calls (docs/rma.md).
void start_progress_thread();
void stop_progress_thread();
// MPI_Finalize: windows the application never freed no longer keep the
// engine busy.
void stop_progress_op();

}  // namespace dtmpi::rma
