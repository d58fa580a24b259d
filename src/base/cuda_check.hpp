// The CUDA half of the error idiom: DTMPI_CUDA_CHECK turns a failed CUDA
// runtime call into an Error naming the call and CUDA's message.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "base/result.hpp"

#define DTMPI_CUDA_CHECK(call)                                                            \
  do {                                                                                    \
    cudaError_t dtmpi_cu_ = (call);                                                       \
    if (dtmpi_cu_ != cudaSuccess)                                                         \
      return ::dtmpi::Error{::dtmpi::kErrCuda,                                            \
                            std::string(#call) + ": " + cudaGetErrorString(dtmpi_cu_)};   \
  } while (0)
