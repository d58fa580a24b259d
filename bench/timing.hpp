// Benchmark timing: warm up, then several samples each long enough to be
// measured well (>= min_sample_s), reporting the median time per operation.
#pragma once
#include <functional>
#include <vector>

namespace dtmpi::bench {

struct Timing {
  double median_s;  // per operation
  double spread;    // (max - min) / median over the samples
};

// The median of `v` (the upper one of an even count); 0 for none.
double median(std::vector<double> v);

Timing time_op(const std::function<void()>& op, double min_sample_s = 0.02, int samples = 5);

// Several operations measured in alternation (sample k of every op before
// sample k+1 of any), so that slow drifts of the machine (other tenants,
// frequency) hit all of them alike; returns one Timing per op.
std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& ops,
                                     double min_sample_s = 0.02, int samples = 7);

// One-way time of a ping-pong between ranks 0 and 1 of MPI_COMM_WORLD (rank
// 0 sends first); iterations chosen so a run lasts about budget_s; the median
// of 3 samples, the same on both ranks.
double pingpong(int me, double budget_s, const std::function<void()>& send, const std::function<void()>& recv);

}  // namespace dtmpi::bench
