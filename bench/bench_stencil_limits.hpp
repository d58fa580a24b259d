// dtmpi-bench stencil's yardsticks (bench_stencil_limits.cpp): the
// contiguous packed-bytes limit and, for device domains, the driver's own
// strided copy of the same boxes. Collective over MPI_COMM_WORLD: every rank
// times them or none does (a failure on one rank gives 0 everywhere).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "dtmpi/stencil.hpp"

namespace dtmpi::bench {

// Times one operation as the bench does (the slowest rank's median; collective).
using StencilTimer = std::function<double(const std::function<void()>&)>;

// `bytes` copied once per op, contiguously, in host memory (memcpy) or device
// memory (one cudaMemcpyAsync device to device); `how` names it. 0: failed.
double stencil_contiguous_limit(bool gpu, int64_t bytes, std::string& how, const StencilTimer& time);

// Every direction's send box of each subdomain of this rank copied into the
// ghost box that direction fills, within the same subdomain (the exchange's
// shapes, pitches and alignments), one cudaMemcpy3DAsync per (direction,
// quantity) replayed from one CUDA graph. 0: failed, or no CUDA.
double stencil_driver_strided_copy(stencil::DistributedDomain& d, const stencil::Radius& r, int quantities,
                                   int64_t elem, const StencilTimer& time);

}  // namespace dtmpi::bench
