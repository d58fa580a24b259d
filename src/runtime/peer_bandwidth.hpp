// The bandwidth between GPUs of this node as this process can measure it
// (the stencil library's placement, issue 23: which subdomains go on which
// GPUs). CUDA-free header; without CUDA the measurement fails.
#pragma once
#include <vector>

#include "base/result.hpp"

namespace dtmpi::runtime {

// GB/s between every ordered pair of `devices` (ordinals of this process), an
// n x n row-major matrix (the diagonal: a copy within the GPU), each the best
// of a few timed copies of 64 MiB by the source GPU's copy engines over the
// peer link where there is one. Done through the driver's primary contexts,
// retained for the measurement and released after it: a GPU the process did
// not use before is left without a context (no memory held on it).
Result<std::vector<double>> measure_peer_bandwidth(const std::vector<int>& devices);

}  // namespace dtmpi::runtime
