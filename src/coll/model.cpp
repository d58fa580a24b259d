// coll/model.hpp. dtmpi's algorithms pull through shared memory: a reader
// pays L + o per flag it waits for and G per byte it copies; a rank whose
// flag many peers wait for serves them one gap g apart.
#include "coll/model.hpp"

#include <algorithm>
#include <cmath>

namespace dtmpi::coll {

int levels(int n, int k) {
  int l = 0;
  for (int64_t reach = 1; reach < n; reach *= k) ++l;
  return l;
}

double kary_broadcast(const LogGP& p, int N, int64_t B, int k) {
  return levels(N, k) * ((p.L + p.o + k * p.g) + k * p.G * static_cast<double>(B));
}

double kary_scatter(const LogGP& p, int N, int t, int64_t B, int k) {
  const double latency = levels(N, k) * (p.L + p.o + k * p.g);
  // k G B t (N - 1) / (k - 1): exact where N is a power of k (digest 3.2)
  const double bandwidth = k * p.G * static_cast<double>(B) * t * (N - 1) / (k - 1);
  return latency + bandwidth;
}

double dissemination_exchange(const LogGP& p, int N, int t, int64_t B, int k) {
  const int lambda = levels(N, k);
  double sum = 0, reach = 1;  // k^i
  for (int i = 0; i <= lambda; ++i, reach *= k) {
    const double peers = std::max(0.0, std::min(static_cast<double>(k), N / reach) - 1);  // clamped (digest 3.9)
    sum += p.L + peers * (p.o + p.g + p.G * static_cast<double>(B) * N * t * t / k);
  }
  return sum;
}

double gather_to_all_dissemination(const LogGP& p, int N, int t, int64_t B) {
  return levels(N, 2) * (p.L + p.o + p.g) + p.G * static_cast<double>(B) * N * t;
}

double gather_to_all_flat(const LogGP& p, int N, int t, int64_t B) {
  return p.L + (N - 1) * (p.o + p.g + p.G * static_cast<double>(B) * t);
}

std::vector<Algorithm> algorithms_for(CollOpKind op) {
  switch (op) {
    case CollOpKind::kBarrier: return {Algorithm::kDissemination, Algorithm::kFlat};
    case CollOpKind::kBcast: return {Algorithm::kBinomial, Algorithm::kFlat};
    case CollOpKind::kAllreduce:
      return {Algorithm::kRecursiveDoubling, Algorithm::kReduceScatterAllgather, Algorithm::kTree};
    case CollOpKind::kReduce: return {Algorithm::kBinomial, Algorithm::kFlat};
    default: return {};
  }
}

double predict(const LogGP& p, CollOpKind op, Algorithm a, int n, int64_t bytes) {
  const double B = static_cast<double>(bytes);
  const int l2 = levels(n, 2);
  switch (op) {
    case CollOpKind::kBarrier:
      if (a == Algorithm::kDissemination) return l2 * (p.L + p.o + p.g);
      if (a == Algorithm::kFlat) return 2 * (p.L + p.o) + (n - 1) * p.g;  // arrivals at one counter, one release
      return -1;
    case CollOpKind::kBcast:
    case CollOpKind::kReduce:
      // the binomial tree as the thesis's radix-2 tree; flat as radix n
      if (a == Algorithm::kBinomial) return kary_broadcast(p, n, bytes, 2);
      if (a == Algorithm::kFlat) return n <= 1 ? 0 : kary_broadcast(p, n, bytes, n);
      return -1;
    case CollOpKind::kAllreduce:
      if (a == Algorithm::kRecursiveDoubling) return l2 * (p.L + p.o + p.g + p.G * B);
      // every rank folds its block of every input, then reads every block
      if (a == Algorithm::kReduceScatterAllgather)
        return 2 * (p.L + (n - 1) * (p.o + p.g) + p.G * B * (n - 1) / std::max(n, 1));
      if (a == Algorithm::kTree) return 2 * kary_broadcast(p, n, bytes, 2);
      return -1;
    default:
      return -1;
  }
}

std::vector<Algorithm> ranked(const LogGP& p, CollOpKind op, int n, int64_t bytes) {
  std::vector<Algorithm> all = algorithms_for(op);
  std::stable_sort(all.begin(), all.end(), [&](Algorithm x, Algorithm y) {
    return predict(p, op, x, n, bytes) < predict(p, op, y, n, bytes);
  });
  return all;
}

}  // namespace dtmpi::coll
