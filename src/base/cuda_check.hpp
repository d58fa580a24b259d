// The CUDA half of the error idiom, runtime and driver API alike:
//   DTMPI_CUDA_CHECK(call) / DTMPI_CU_CHECK(call)  return an Error naming the
//     call and CUDA's answer (kErrCuda);
//   DTMPI_CUDA_STATUS(call) / DTMPI_CU_STATUS(call)  the same Error as a Status value (cleanup first);
//   DTMPI_CUDA_WARN(call) / DTMPI_CU_WARN(call)    evaluate to true on success,
//     else log the call once and evaluate to false (no way to return an error);
//   DTMPI_CUDA_PROBE(call) / DTMPI_CU_PROBE(call)  the same, logged at debug
//     level only: capability probes whose failure is an answer ("no device",
//     "not CUDA memory", "unsupported here"), not a fault.
// Every failed runtime call's error is cleared (cudaGetLastError) so that it
// cannot surface again from a later, unrelated call.
// Driver calls go through function pointers (runtime/cuda_device.hpp), so
// their answer is reported as its number (cuGetErrorString may be absent).
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

#include "base/result.hpp"

#define DTMPI_CUDA_CHECK(call)                                                            \
  do {                                                                                    \
    cudaError_t dtmpi_cu_ = (call);                                                       \
    if (dtmpi_cu_ != cudaSuccess) {                                                       \
      cudaGetLastError();                                                                 \
      return ::dtmpi::Error{::dtmpi::kErrCuda,                                            \
                            std::string(#call) + ": " + cudaGetErrorString(dtmpi_cu_)};   \
    }                                                                                     \
  } while (0)

#define DTMPI_CU_CHECK(call)                                                              \
  do {                                                                                    \
    CUresult dtmpi_cr_ = (call);                                                          \
    if (dtmpi_cr_ != CUDA_SUCCESS)                                                        \
      return ::dtmpi::Error{::dtmpi::kErrCuda, std::string(#call) + " failed (" +         \
                                                   std::to_string(static_cast<int>(dtmpi_cr_)) + ")"}; \
  } while (0)

namespace dtmpi {
// A CUDA runtime return code as a Status (DTMPI_CUDA_STATUS), for a caller that
// cleans up or folds several calls before it propagates.
inline Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return ok_status();
  cudaGetLastError();
  return Error{kErrCuda, std::string(what) + ": " + cudaGetErrorString(e)};
}
inline Status cu_status(CUresult e, const char* what) {
  if (e == CUDA_SUCCESS) return ok_status();
  return Error{kErrCuda, std::string(what) + " failed (" + std::to_string(static_cast<int>(e)) + ")"};
}
}  // namespace dtmpi

namespace dtmpi::detail {
inline bool cuda_ok(cudaError_t e, const char* what, log::Level level) {
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  if (log::enabled(level)) log::write(level, "%s: %s", what, cudaGetErrorString(e));
  return false;
}
inline bool cu_ok(CUresult e, const char* what, log::Level level) {
  if (e == CUDA_SUCCESS) return true;
  if (log::enabled(level)) log::write(level, "%s failed (%d)", what, static_cast<int>(e));
  return false;
}
}  // namespace dtmpi::detail

#define DTMPI_CUDA_STATUS(call) ::dtmpi::cuda_status((call), #call)
#define DTMPI_CU_STATUS(call) ::dtmpi::cu_status((call), #call)
#define DTMPI_CUDA_WARN(call) ::dtmpi::detail::cuda_ok((call), #call, ::dtmpi::log::Level::kWarn)
#define DTMPI_CUDA_PROBE(call) ::dtmpi::detail::cuda_ok((call), #call, ::dtmpi::log::Level::kDebug)
#define DTMPI_CU_WARN(call) ::dtmpi::detail::cu_ok((call), #call, ::dtmpi::log::Level::kWarn)
#define DTMPI_CU_PROBE(call) ::dtmpi::detail::cu_ok((call), #call, ::dtmpi::log::Level::kDebug)
