// Benchmark timing: warm up, then several samples each long enough to be
// measured well (>= min_sample_s), reporting the median time per operation.
#pragma once
#include <functional>

namespace dtmpi::bench {

struct Timing {
  double median_s;  // per operation
  double spread;    // (max - min) / median over the samples
};

Timing time_op(const std::function<void()>& op, double min_sample_s = 0.02, int samples = 5);

}  // namespace dtmpi::bench
