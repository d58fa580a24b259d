// The suite's kernels (scope_kernels.cu), launched on the current device.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dtmpi::scope::kernels {

// Reads `bytes` at p, 16 bytes a load where aligned, so that neither NVVM nor
// ptxas can drop the loads (thesis Listing 3.2: do_not_optimize and a store
// behind a flag that is null at run time).
cudaError_t read(const void* p, size_t bytes, cudaStream_t s);
// Writes the test pattern (scope_pattern.hpp, `seed`) over `bytes` at p.
cudaError_t write(void* p, size_t bytes, uint32_t seed, cudaStream_t s);
// Copies `bytes` from src to dst (either may be another GPU's or mapped host memory).
cudaError_t copy(void* dst, const void* src, size_t bytes, cudaStream_t s);
// One thread spinning for `ns` nanoseconds of the GPU's global timer.
cudaError_t spin(uint64_t ns, cudaStream_t s);
// An empty kernel with 0, 1, 256 or 4096 bytes of parameters (<<<1, 1>>>).
cudaError_t empty(int param_bytes, cudaStream_t s);

}  // namespace dtmpi::scope::kernels
