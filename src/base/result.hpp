// The one error idiom of dtmpi: functions that can fail return Result<T> (or
// Status for no value); DTMPI_TRY propagates, DTMPI_MPI_CHECK / DTMPI_CUDA_CHECK
// turn a foreign return code into an Error that records where it came from.
// The interposer converts an Error into an MPI error code at the boundary.
#pragma once
#include <string>

#include "base/log.hpp"
#include <utility>
#include <variant>

namespace dtmpi {

struct Error {
  int code;          // an MPI error code (MPI_ERR_*) or an internal code below
  std::string what;  // which call failed, for logs
  // The system MPI already passed `code` to the communicator's error handler
  // (a call of its on the application's communicator failed): the boundary
  // returns the code without calling the handler a second time.
  bool reported = false;
};

// Internal codes; they never reach the application as such.
inline constexpr int kErrUnsupported = -1001;  // engine cannot plan: fall back
inline constexpr int kErrTooLarge = -1002;     // plan would exceed limits
inline constexpr int kErrCuda = -1003;         // CUDA call failed

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Error err) : v_(std::move(err)) {}           // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

// A Status from an MPI return code `rc` (0, MPI_SUCCESS: success); `reported`
// as in Error.
inline Status mpi_status(int rc, const char* what, bool reported = false) {
  if (rc == 0) return ok_status();
  return Error{rc, what, reported};
}

// The first failure of several calls made as one (MPI's rule: a call made of
// several returns the first error): `a` if it failed, else `b`.
inline Status first_error(Status a, Status b) { return a ? std::move(b) : std::move(a); }

// The code an MPI call returns for `s`, WITHOUT the boundary's handler call:
// for the few places that hand a code to the system MPI itself (a generalized
// request's query function, an engine operation's recorded error) or write it
// into a status's MPI_ERROR field as the system MPI's own call would.
inline int code_of(const Status& s) { return s ? 0 /* MPI_SUCCESS */ : s.error().code; }

namespace detail {
// The logging half of DTMPI_*_WARN: true if `rc` is success, else logs the
// failed call once (warn level) and returns false.
inline bool warn_unless_ok(int rc, const char* what) {
  if (rc == 0) return true;
  DTMPI_LOG(kWarn, "%s failed (code %d); continuing", what, rc);
  return false;
}
// The same at debug level, for DTMPI_MPI_PROBE: a failure is an answer.
inline bool probe_ok(int rc, const char* what) {
  if (rc == 0) return true;
  DTMPI_LOG(kDebug, "%s failed (code %d)", what, rc);
  return false;
}
}  // namespace detail

}  // namespace dtmpi

#define DTMPI_CONCAT_INNER(a, b) a##b
#define DTMPI_CONCAT(a, b) DTMPI_CONCAT_INNER(a, b)

// Propagate the error of a Result-returning expression; on success, bind nothing.
#define DTMPI_TRY(expr)                                        \
  do {                                                         \
    auto DTMPI_CONCAT(dtmpi_r_, __LINE__) = (expr);            \
    if (!DTMPI_CONCAT(dtmpi_r_, __LINE__).ok())                \
      return DTMPI_CONCAT(dtmpi_r_, __LINE__).error();         \
  } while (0)

// Check an MPI return code; on failure return an Error naming the call.
#define DTMPI_MPI_CHECK(call)                                  \
  do {                                                         \
    int dtmpi_rc_ = (call);                                    \
    if (dtmpi_rc_ != 0 /* MPI_SUCCESS */)                      \
      return ::dtmpi::Error{dtmpi_rc_, #call};                 \
  } while (0)

// The same for a call of the system MPI on the application's communicator,
// which has already passed the code to that communicator's error handler.
#define DTMPI_MPI_CHECK_REPORTED(call)                         \
  do {                                                         \
    int dtmpi_rc_ = (call);                                    \
    if (dtmpi_rc_ != 0 /* MPI_SUCCESS */)                      \
      return ::dtmpi::Error{dtmpi_rc_, #call, true};           \
  } while (0)


// An MPI return code as a Status naming the call, for a caller that must clean
// up before it propagates (`if (!s) { release(...); return s; }`).
#define DTMPI_MPI_STATUS(call) ::dtmpi::mpi_status((call), #call)
#define DTMPI_MPI_STATUS_REPORTED(call) ::dtmpi::mpi_status((call), #call, true)

// A call dtmpi forwards to the system MPI on the application's behalf (the
// application's own call, or the system MPI's part of it: the staged
// collective's exchange, the first half of MPI_Sendrecv): its return code is
// the application's answer, and the boundary (interpose::result) returns it
// unchanged -- the system MPI has already passed it to the error handler.
// DTMPI_MPI_STATUS_REPORTED under the name of what it is for; a forward that
// is the whole of an exported call (`return REAL(MPI_Send)(...)`) needs none.
#define DTMPI_MPI_FORWARD(call) ::dtmpi::mpi_status((call), #call, true)

// Where a failure cannot be returned (destructors, progress loops, cleanup
// paths, functions that answer bool by design): evaluates to true if the call
// succeeded, else logs it once and evaluates to false, so the caller can
// still take its fallback (`if (DTMPI_MPI_WARN(call) && done)`).
#define DTMPI_MPI_WARN(call) ::dtmpi::detail::warn_unless_ok((call), #call)
// Where a failure is an answer, not a fault (a request whose status cannot
// be read counts as complete: the call that waits for it reports the error):
// true if the call succeeded, else logs it at debug level and is false.
#define DTMPI_MPI_PROBE(call) ::dtmpi::detail::probe_ok((call), #call)
