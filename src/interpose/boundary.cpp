#include "interpose/boundary.hpp"

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "rma/window.hpp"

namespace dtmpi::interpose {

namespace {

// Logs an Error dtmpi found itself, where it says what failed.
void log_error(const Error& e) {
  if (!e.what.empty()) DTMPI_LOG(kError, "%s", e.what.c_str());
}

}  // namespace

int result(MPI_Comm comm, const Status& s) {
  if (s) return MPI_SUCCESS;
  const Error& e = s.error();
  if (e.reported) return e.code;
  log_error(e);
  REAL(MPI_Comm_call_errhandler)(comm, e.code);
  return e.code;
}

int result(rma::Window& win, const Status& s) {
  if (s) return MPI_SUCCESS;
  const Error& e = s.error();
  if (e.reported) return e.code;
  log_error(e);
  return rma::raise(win, e.code < 0 ? MPI_ERR_OTHER : e.code);
}

int win_result(MPI_Win win, const Status& s) {
  if (s) return MPI_SUCCESS;
  const Error& e = s.error();
  if (e.reported) return e.code;
  log_error(e);
  const int code = e.code < 0 ? MPI_ERR_OTHER : e.code;
  REAL(MPI_Win_call_errhandler)(win, code);
  return code;
}

int result(const Status& s) { return result(MPI_COMM_WORLD, s); }

int completion_result(const Status& s) {
  if (s) return MPI_SUCCESS;
  const Error& e = s.error();
  if (!e.reported) log_error(e);
  return e.code;
}

}  // namespace dtmpi::interpose
