// GPU discovery through the CUDA runtime (built when CUDA is enabled).
#include <cuda_runtime.h>

#include "base/cuda_check.hpp"
#include "runtime/config.hpp"
#include "runtime/system_info.hpp"

namespace dtmpi::runtime {

GpuInfo query_gpus() {
  GpuInfo info;
  info.built_with_cuda = true;
  if (config().cuda == "off") {
    info.note = "DTMPI_CUDA=off";
    return info;
  }
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (!DTMPI_CUDA_PROBE(rc)) {  // also clears the error so later calls start clean
    info.note = cudaGetErrorString(rc);
    return info;
  }
  info.count = n;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    if (DTMPI_CUDA_PROBE(cudaGetDeviceProperties(&prop, d))) info.names.emplace_back(prop.name);
  }
  if (n == 0) info.note = "no CUDA device";
  return info;
}

}  // namespace dtmpi::runtime
