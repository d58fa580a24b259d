// The boundary of the error idiom (docs/architecture.md, Errors): the one
// place where an Error becomes the MPI code an exported call returns. Every
// exported function that can fail inside dtmpi ends here; the code below it
// returns Status / Result.
#pragma once
#include <mpi.h>

#include "base/result.hpp"

namespace dtmpi::rma {
struct Window;
}

namespace dtmpi::interpose {

// The MPI code a call on `comm` returns for `s`: MPI_SUCCESS; the code of an
// Error the system MPI already passed to the communicator's error handler
// (Error::reported: a forwarded call's code, unchanged); else the Error is
// logged (where it says what failed) and passed to comm's error handler once.
int result(MPI_Comm comm, const Status& s);
// The same for a call with no communicator (MPI_Init, MPI_Type_commit,
// MPI_Reduce_local, ...): MPI_COMM_WORLD's error handler (MPI-3.1 sec. 8.3).
int result(const Status& s);
// The same for a call on a window dtmpi serves: the window's error handler
// (MPI-3.1 sec. 8.3: errors of one-sided calls are raised on the window).
int result(rma::Window& win, const Status& s);
// The same for a call on a window the system MPI serves, where dtmpi failed
// before or after the system MPI's part (a GPU buffer's host stand-in).
int win_result(MPI_Win win, const Status& s);
// The same for a completion call (the MPI_Wait* / MPI_Test* family,
// MPI_Request_get_status), whose errors MPI raises on each request's
// communicator: dtmpi's own work behind a request (an unpack, a
// non-blocking collective's unstaging) does not keep it, so its Error is
// logged and returned without a handler call (the system MPI's own errors of
// the call are reported as always).
int completion_result(const Status& s);

}  // namespace dtmpi::interpose
