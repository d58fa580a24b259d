// coll/model.hpp. dtmpi's algorithms pull through shared memory: a reader
// pays L + o per flag it waits for and G per byte it copies; a rank whose
// flag many peers wait for serves them one gap g apart.
#include "coll/model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "coll/trees.hpp"

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

// A K-ary tree's terms (kary_broadcast / kary_scatter with the tree's own
// depth: a K-ary tree of n ranks is one level deeper than log_k(n) unless n
// fills its last level): a parent waits for and reads its k children.
double kary_tree_broadcast(const LogGP& p, int N, int64_t B, int k) {
  return tree_depth(N, Tree{Tree::Shape::kKary, k}) * ((p.L + p.o + k * p.g) + k * p.G * static_cast<double>(B));
}
double kary_tree_scatter(const LogGP& p, int N, int64_t B, int k) {
  const double latency = tree_depth(N, Tree{Tree::Shape::kKary, k}) * (p.L + p.o + k * p.g);
  // every block below a parent passes it once per level: at most (N-1) x depth, k G B (N-1)/(k-1) as the thesis's
  return latency + k * p.G * static_cast<double>(B) * (N - 1) / std::max(k - 1, 1);
}
// The children of a K-ary algorithm's nodes (ops.cpp's tree_of); 0 for any other.
int kary_children_of(Algorithm a) {
  const std::optional<Tree> t = tree_of(a);
  return t && t->shape == Tree::Shape::kKary ? t->k : 0;
}

std::vector<Algorithm> algorithms_for(CollOpKind op) {
  switch (op) {
    case CollOpKind::kBarrier:
      return {Algorithm::kDissemination, Algorithm::kFlat, Algorithm::kKnomial4, Algorithm::kKnomial8,
              Algorithm::kKary2, Algorithm::kKary4, Algorithm::kKary8};
    case CollOpKind::kBcast:
      return {Algorithm::kBinomial, Algorithm::kFlat,     Algorithm::kChain, Algorithm::kChain4K,
              Algorithm::kChain16K, Algorithm::kKnomial4, Algorithm::kKnomial8, Algorithm::kKary2,
              Algorithm::kKary4,    Algorithm::kKary8};
    case CollOpKind::kAllreduce:
      return {Algorithm::kRecursiveDoubling, Algorithm::kReduceScatterAllgather, Algorithm::kTree,
              Algorithm::kKnomial4, Algorithm::kKnomial8, Algorithm::kChain, Algorithm::kChain4K,
              Algorithm::kChain16K, Algorithm::kKary2, Algorithm::kKary4, Algorithm::kKary8};
    case CollOpKind::kReduce:
      return {Algorithm::kBinomial, Algorithm::kFlat,    Algorithm::kKnomial4, Algorithm::kKnomial8,
              Algorithm::kChain,    Algorithm::kChain4K, Algorithm::kChain16K, Algorithm::kKary2,
              Algorithm::kKary4,    Algorithm::kKary8};
    case CollOpKind::kAllgather:
    case CollOpKind::kAllgatherv: return {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kFlat};
    case CollOpKind::kGather:
    case CollOpKind::kScatter:
      return {Algorithm::kBinomial, Algorithm::kFlat, Algorithm::kKnomial4, Algorithm::kKnomial8,
              Algorithm::kKary2, Algorithm::kKary4, Algorithm::kKary8};
    case CollOpKind::kGatherv:
    case CollOpKind::kScatterv: return {Algorithm::kFlat};
    case CollOpKind::kAlltoall:
      return {Algorithm::kPairwise, Algorithm::kFlat, Algorithm::kBruck, Algorithm::kBruck4};
    case CollOpKind::kAlltoallv:
      return {Algorithm::kPairwise, Algorithm::kFlat, Algorithm::kBruck, Algorithm::kBruck4};
    case CollOpKind::kReduceScatterBlock:
    case CollOpKind::kReduceScatter: return {Algorithm::kFlat};
    case CollOpKind::kScan:
    case CollOpKind::kExscan: return {Algorithm::kLinear, Algorithm::kRecursiveDoubling};
    default: return {};
  }
}

namespace {

// A chain's segment in the model: the fixed ones' bytes, kChain's `quarter`
// (a quarter of the default scratch's region).
double chain_model_segment(Algorithm a, double quarter) {
  const size_t fixed = chain_fixed_segment(a);
  return fixed ? static_cast<double>(fixed) : quarter;
}

}  // namespace

double predict(const LogGP& p, CollOpKind op, Algorithm a, int n, int64_t bytes) {
  const double B = static_cast<double>(bytes);
  const int l2 = levels(n, 2);
  switch (op) {
    // the v forms as their uniform ones with every block the largest (the
    // chunks are cut by it); Gatherv, Scatterv and Alltoallv first agree on
    // it: one 8-byte recursive-doubling allreduce
    case CollOpKind::kAllgatherv:
      return predict(p, CollOpKind::kAllgather, a, n, bytes);
    case CollOpKind::kGatherv:
    case CollOpKind::kScatterv:
    case CollOpKind::kAlltoallv: {
      const bool bruck = a == Algorithm::kBruck || a == Algorithm::kBruck4;
      if (bruck && op != CollOpKind::kAlltoallv) return -1;  // Alltoall's and Alltoallv's only
      const CollOpKind uniform = op == CollOpKind::kGatherv    ? CollOpKind::kGather
                                 : op == CollOpKind::kScatterv ? CollOpKind::kScatter
                                                               : CollOpKind::kAlltoall;
      const double t = predict(p, uniform, a, n, bytes);
      // Bruck's Alltoallv also copies every block into and out of its padded place
      const double padding = bruck ? 2 * n * B * p.G : 0;
      return t < 0 ? t : t + padding + l2 * (p.L + p.o + p.g + p.G * 8);
    }
    case CollOpKind::kBarrier:
      if (a == Algorithm::kDissemination) return l2 * (p.L + p.o + p.g);
      // arrivals at one counter, one release: each atomic add needs the
      // counter's line exclusively, so the arrivals queue for it -- (n-1) L/2,
      // calibrated on the H100 host at 4-16 ranks, where the plain (n-1) g
      // ranked the flat barrier first and it measured slowest
      // (bench/results/coll-tune-1xh100-2026-11-26.txt)
      if (a == Algorithm::kFlat) return 2 * (p.L + p.o) + (n - 1) * (p.g + p.L / 2);
      if (a == Algorithm::kKnomial4 || a == Algorithm::kKnomial8) {
        // a parent reads up to k-1 children's lines per level; one release all read
        const int k = radix_of(a);
        return levels(n, k) * (p.L + p.o + (k - 1) * p.g) + p.L + p.o;
      }
      // a parent reads its k children's lines per level
      if (const int k = kary_children_of(a))
        return tree_depth(n, Tree{Tree::Shape::kKary, k}) * (p.L + p.o + k * p.g) + p.L + p.o;
      return -1;
    case CollOpKind::kBcast:
    case CollOpKind::kReduce:
      // the binomial tree as the thesis's radix-2 tree; flat as radix n
      if (a == Algorithm::kBinomial) return kary_broadcast(p, n, bytes, 2);
      if (a == Algorithm::kKnomial4 || a == Algorithm::kKnomial8) return kary_broadcast(p, n, bytes, radix_of(a));
      if (const int k = kary_children_of(a)) return kary_tree_broadcast(p, n, bytes, k);
      if (a == Algorithm::kFlat) return n <= 1 ? 0 : kary_broadcast(p, n, bytes, n);
      if (is_chain(a)) {
        // n-1 hops of the first segment, then one segment per hop behind it
        // (kChain's segments a quarter of the default scratch: 64 KiB;
        // Reduce's a quarter of one of its two regions: 32 KiB; the fold of a
        // segment counted in its G)
        const double quarter = op == CollOpKind::kReduce ? 32768.0 : 65536.0;
        const double seg = std::min(B, chain_model_segment(a, quarter)), segments = std::ceil(B / std::max(seg, 1.0));
        return (n - 2 + segments) * (p.L + p.o + p.G * seg);
      }
      return -1;
    case CollOpKind::kAllreduce:
      if (a == Algorithm::kRecursiveDoubling) return l2 * (p.L + p.o + p.g + p.G * B);
      // every rank folds its block of every input, then reads every block
      if (a == Algorithm::kReduceScatterAllgather)
        return 2 * (p.L + (n - 1) * (p.o + p.g) + p.G * B * (n - 1) / std::max(n, 1));
      if (a == Algorithm::kTree) return 2 * kary_broadcast(p, n, bytes, 2);
      // the K-nomial reduce, then one read of the result (every rank at once)
      if (a == Algorithm::kKnomial4 || a == Algorithm::kKnomial8)
        return kary_broadcast(p, n, bytes, radix_of(a)) + p.L + p.o + (n - 1) * p.g + p.G * B;
      if (const int k = kary_children_of(a)) return kary_tree_broadcast(p, n, bytes, k) + p.L + p.o + (n - 1) * p.g + p.G * B;
      if (is_chain(a)) {
        // the first segment's n-1 hops to rank 0 and n-1 back around the
        // ring, then a segment every n/2 hops (reduce_ops.cpp: a chunk ends
        // at a rank only with both halves; kChain's segments of 32 KiB as Reduce's)
        if (n <= 1) return 0;
        const double seg = std::min(B, chain_model_segment(a, 32768.0)), segments = std::ceil(B / std::max(seg, 1.0));
        return (2.0 * (n - 1) + (segments - 1) * std::max(1.0, n / 2.0)) * (p.L + p.o + p.G * seg);
      }
      return -1;
    // `bytes` is one rank's block below
    case CollOpKind::kAllgather:
      if (a == Algorithm::kFlat) return gather_to_all_flat(p, n, 1, bytes);
      if (a == Algorithm::kRecursiveDoubling) return gather_to_all_dissemination(p, n, 1, bytes);
      if (a == Algorithm::kRing) return (n - 1) * (p.L + p.o + p.g + p.G * B);  // a chain of n-1 waits
      return -1;
    case CollOpKind::kGather:
    case CollOpKind::kScatter:
      // the reverse of one another (thesis 5.3); flat as radix n
      if (a == Algorithm::kBinomial) return kary_scatter(p, n, 1, bytes, 2);
      // the K-nomial trees as the thesis's K-ary ones of the same radix
      if (a == Algorithm::kKnomial4 || a == Algorithm::kKnomial8) return kary_scatter(p, n, 1, bytes, radix_of(a));
      if (const int k = kary_children_of(a)) return kary_tree_scatter(p, n, bytes, k);
      if (a == Algorithm::kFlat) return n <= 1 ? 0 : kary_scatter(p, n, 1, bytes, n);
      return -1;
    case CollOpKind::kAlltoall: {
      // every rank publishes its n blocks, then reads one from each peer; in
      // the flat order all readers start at the same rank and queue there
      const double common = n * p.G * B + p.L + p.o + (n - 1) * (p.g + p.G * B);
      if (a == Algorithm::kPairwise) return common;
      if (a == Algorithm::kFlat) return common + (n - 1) * p.g;
      if (a == Algorithm::kBruck || a == Algorithm::kBruck4) {
        // the n-1 rotated blocks into the slot, then per level one wait, a
        // flag per round (k-1 sources) and a copy of the round's blocks
        // (radix 2: about n/2): fewer waits than pairwise, more bytes -- the
        // small blocks' algorithms
        double t = (n - 1) * p.G * B;
        int level = -1;
        for (const BruckRound& r : bruck_rounds(n, radix_of(a))) {
          if (r.level != level) t += p.L + p.o;
          level = r.level;
          t += p.g + r.pieces * p.G * B;
        }
        return t;
      }
      return -1;
    }
    case CollOpKind::kReduceScatterBlock:
    case CollOpKind::kReduceScatter:  // `bytes`: the largest block
      // publish n blocks, fold this rank's block of every input
      if (a == Algorithm::kFlat) return n * p.G * B + p.L + (n - 1) * (p.o + p.g + p.G * B);
      return -1;
    case CollOpKind::kScan:
    case CollOpKind::kExscan:
      if (a == Algorithm::kLinear) return (n - 1) * (p.L + p.o + p.g + p.G * B);  // the last rank waits for all
      if (a == Algorithm::kRecursiveDoubling) return l2 * (p.L + p.o + p.g + p.G * B);
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
