#include "timing.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace dtmpi::bench {

namespace {
using clock = std::chrono::steady_clock;
double seconds(clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Repetitions so that one sample of `op` lasts at least min_sample_s.
long calibrate(const std::function<void()>& op, double min_sample_s) {
  op();  // warm-up (page faults, caches)
  long reps = 1;
  for (;;) {
    auto t0 = clock::now();
    for (long i = 0; i < reps; ++i) op();
    double dt = seconds(clock::now() - t0);
    if (dt >= min_sample_s || reps > (1L << 30)) return reps;
    reps = dt > 0 ? std::max(reps * 2, static_cast<long>(reps * min_sample_s / dt * 1.2)) : reps * 10;
  }
}

Timing summarize(const std::vector<double>& per_op) {
  const double med = median(per_op);
  const auto [lo, hi] = std::minmax_element(per_op.begin(), per_op.end());
  return Timing{med, med > 0 ? (*hi - *lo) / med : 0.0};
}
}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& ops,
                                     double min_sample_s, int samples) {
  std::vector<long> reps;
  for (const auto& op : ops) reps.push_back(calibrate(op, min_sample_s));
  std::vector<std::vector<double>> per_op(ops.size());
  for (int s = 0; s < samples; ++s) {
    for (size_t k = 0; k < ops.size(); ++k) {
      auto t0 = clock::now();
      for (long i = 0; i < reps[k]; ++i) ops[k]();
      per_op[k].push_back(seconds(clock::now() - t0) / static_cast<double>(reps[k]));
    }
  }
  std::vector<Timing> out;
  for (auto& v : per_op) out.push_back(summarize(std::move(v)));
  return out;
}

Timing time_op(const std::function<void()>& op, double min_sample_s, int samples) {
  return time_interleaved({op}, min_sample_s, samples).front();
}

double pingpong(int me, double budget_s, const std::function<void()>& send, const std::function<void()>& recv) {
  auto round = [&] {
    if (me == 0) send(), recv();
    else recv(), send();
  };
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  round();  // warm-up, and a first estimate
  round();
  double est = (MPI_Wtime() - t0) / 2;
  PMPI_Bcast(&est, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const int iters = static_cast<int>(std::clamp(budget_s / std::max(est, 1e-7), 3.0, 2000.0));
  std::vector<double> samples;
  for (int s = 0; s < 3; ++s) {
    PMPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < std::max(1, iters / 3); ++i) round();
    samples.push_back((MPI_Wtime() - t0) / std::max(1, iters / 3) / 2);
  }
  std::sort(samples.begin(), samples.end());
  double t = samples[1];
  PMPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

}  // namespace dtmpi::bench
