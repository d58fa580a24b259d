// GPU discovery through the CUDA runtime (built when CUDA is enabled).
#include <cuda_runtime.h>

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
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    info.note = cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return info;
  }
  info.count = n;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) info.names.emplace_back(prop.name);
  }
  if (n == 0) info.note = "no CUDA device";
  return info;
}

}  // namespace dtmpi::runtime
