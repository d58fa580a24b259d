#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace dtmpi::bench {

Timing time_op(const std::function<void()>& op, double min_sample_s, int samples) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  op();  // warm-up (page faults, caches)
  // calibrate repetitions so one sample lasts at least min_sample_s
  long reps = 1;
  for (;;) {
    auto t0 = clock::now();
    for (long i = 0; i < reps; ++i) op();
    double dt = seconds(clock::now() - t0);
    if (dt >= min_sample_s || reps > (1L << 30)) break;
    reps = dt > 0 ? std::max(reps * 2, static_cast<long>(reps * min_sample_s / dt * 1.2)) : reps * 10;
  }
  std::vector<double> per_op;
  for (int s = 0; s < samples; ++s) {
    auto t0 = clock::now();
    for (long i = 0; i < reps; ++i) op();
    per_op.push_back(seconds(clock::now() - t0) / static_cast<double>(reps));
  }
  std::sort(per_op.begin(), per_op.end());
  const double med = per_op[per_op.size() / 2];
  return Timing{med, med > 0 ? (per_op.back() - per_op.front()) / med : 0.0};
}

}  // namespace dtmpi::bench
