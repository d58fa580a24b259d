#include "stencil/placement.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <sstream>

#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {
namespace {

Status well_formed(const PlacementProblem& p) {
  const size_t nn = static_cast<size_t>(p.n) * static_cast<size_t>(p.n);
  if (p.n < 1 || p.flow.size() != nn || p.distance.size() != nn)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: placement of " + std::to_string(p.n) +
                                  " subdomains needs two " + std::to_string(p.n) + "x" + std::to_string(p.n) +
                                  " matrices (flow " + std::to_string(p.flow.size()) + ", distance " +
                                  std::to_string(p.distance.size()) + " entries)"};
  for (size_t i = 0; i < nn; ++i)
    if (!std::isfinite(p.flow[i]) || !std::isfinite(p.distance[i]) || p.flow[i] < 0 || p.distance[i] < 0)
      return Error{MPI_ERR_ARG, "dtmpi::stencil: placement matrices need finite values >= 0"};
  return ok_status();
}

// What swapping the slots of subdomains r and s changes in the cost: only the
// terms with r or s at one end, O(n) instead of recomputing O(n^2).
double swap_delta(const PlacementProblem& p, const std::vector<int>& perm, int r, int s) {
  const size_t n = static_cast<size_t>(p.n);
  auto F = [&](int i, int j) { return p.flow[static_cast<size_t>(i) * n + static_cast<size_t>(j)]; };
  auto D = [&](int a, int b) { return p.distance[static_cast<size_t>(a) * n + static_cast<size_t>(b)]; };
  const int pr = perm[static_cast<size_t>(r)], ps = perm[static_cast<size_t>(s)];
  double d = F(r, r) * (D(ps, ps) - D(pr, pr)) + F(s, s) * (D(pr, pr) - D(ps, ps)) + F(r, s) * (D(ps, pr) - D(pr, ps)) +
             F(s, r) * (D(pr, ps) - D(ps, pr));
  for (int k = 0; k < p.n; ++k) {
    if (k == r || k == s) continue;
    const int pk = perm[static_cast<size_t>(k)];
    d += F(k, r) * (D(pk, ps) - D(pk, pr)) + F(k, s) * (D(pk, pr) - D(pk, ps)) + F(r, k) * (D(ps, pk) - D(pr, pk)) +
         F(s, k) * (D(pr, pk) - D(ps, pk));
  }
  return d;
}

// Rounding: a candidate must be cheaper by more than this to replace the
// incumbent, so equal costs computed in another order never flip a choice.
double slack(double cost) { return 1e-9 * std::max(1.0, std::fabs(cost)); }

// Best-improvement pairwise swaps until no swap helps.
void descend(const PlacementProblem& p, std::vector<int>& perm) {
  double cost = placement_cost(p, perm);
  for (;;) {
    double best = -slack(cost);
    int br = -1, bs = -1;
    for (int r = 0; r < p.n; ++r)
      for (int s = r + 1; s < p.n; ++s) {
        const double d = swap_delta(p, perm, r, s);
        if (d < best) {
          best = d;
          br = r;
          bs = s;
        }
      }
    if (br < 0) return;
    std::swap(perm[static_cast<size_t>(br)], perm[static_cast<size_t>(bs)]);
    cost += best;
  }
}

// Heaviest subdomains first, each to the free slot that adds the least cost
// against those already placed.
std::vector<int> greedy(const PlacementProblem& p) {
  const size_t n = static_cast<size_t>(p.n);
  std::vector<double> weight(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) weight[i] += p.flow[i * n + j] + p.flow[j * n + i];
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return weight[static_cast<size_t>(a)] > weight[static_cast<size_t>(b)]; });
  std::vector<int> perm(n, -1);
  std::vector<bool> used(n, false);
  for (int i : order) {
    double best = 0;
    int slot = -1;
    for (size_t t = 0; t < n; ++t) {
      if (used[t]) continue;
      double add = 0;
      for (size_t j = 0; j < n; ++j) {
        const int pj = perm[j];
        if (pj < 0) continue;
        add += p.flow[static_cast<size_t>(i) * n + j] * p.distance[t * n + static_cast<size_t>(pj)] +
               p.flow[j * n + static_cast<size_t>(i)] * p.distance[static_cast<size_t>(pj) * n + t];
      }
      if (slot < 0 || add < best - slack(best)) {
        best = add;
        slot = static_cast<int>(t);
      }
    }
    perm[static_cast<size_t>(i)] = slot;
    used[static_cast<size_t>(slot)] = true;
  }
  return perm;
}

}  // namespace

double placement_cost(const PlacementProblem& p, const std::vector<int>& slot_of) {
  const size_t n = static_cast<size_t>(p.n);
  double c = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      const double f = p.flow[i * n + j];
      if (f != 0) c += f * p.distance[static_cast<size_t>(slot_of[i]) * n + static_cast<size_t>(slot_of[j])];
    }
  return c;
}

Result<PlacementResult> place_exhaustive(const PlacementProblem& p) {
  DTMPI_TRY(well_formed(p));
  if (p.n > 10)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: exhaustive placement of " + std::to_string(p.n) +
                                  " subdomains (" + std::to_string(p.n) + "! permutations); at most 10"};
  PlacementResult r;
  std::vector<int> perm(static_cast<size_t>(p.n));
  std::iota(perm.begin(), perm.end(), 0);
  r.slot_of = perm;
  r.identity_cost = r.cost = placement_cost(p, perm);
  r.exhaustive = true;
  while (std::next_permutation(perm.begin(), perm.end())) {
    const double c = placement_cost(p, perm);
    if (c < r.cost - slack(r.cost)) {
      r.cost = c;
      r.slot_of = perm;
    }
  }
  return r;
}

Result<PlacementResult> place_local_search(const PlacementProblem& p) {
  DTMPI_TRY(well_formed(p));
  const size_t n = static_cast<size_t>(p.n);
  PlacementResult r;
  r.slot_of.resize(n);
  std::iota(r.slot_of.begin(), r.slot_of.end(), 0);
  r.identity_cost = r.cost = placement_cost(p, r.slot_of);
  std::vector<std::vector<int>> starts{r.slot_of, greedy(p)};
  // seeded, so every rank computes the same placement from the same input
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int k = 0; k < 8; ++k) {
    std::vector<int> perm = r.slot_of;
    for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[next() % i]);
    starts.push_back(perm);
  }
  for (std::vector<int>& perm : starts) {
    descend(p, perm);
    const double c = placement_cost(p, perm);  // exact, not the sum of deltas
    if (c < r.cost - slack(r.cost)) {
      r.cost = c;
      r.slot_of = perm;
    }
  }
  return r;
}

Result<PlacementResult> place(const PlacementProblem& p) {
  return p.n <= kExhaustiveMax ? place_exhaustive(p) : place_local_search(p);
}

std::vector<double> node_flow(const Partition& part, int node, const std::array<bool, 3>& periodic,
                              const Radius& domain_radius, const std::vector<QuantityShape>& quantities) {
  const int per_node = part.per_node(), first = node * per_node;
  const size_t n = static_cast<size_t>(per_node);
  std::vector<double> flow(n * n, 0);
  for (int l = 0; l < per_node; ++l) {
    const Dim3 g = part.index_of(first + l);
    const Box owned = part.box(g);
    for (const Dim3& dir : directions()) {
      // the same test and boxes as build_plan()'s region()
      if (ghost_box(owned, dir, domain_radius).empty()) continue;
      const auto nb = part.neighbour(g, dir, periodic);
      if (!nb) continue;
      const int nid = part.id_of(*nb);
      if (part.node_of(nid) != node) continue;
      double bytes = 0;
      for (const QuantityShape& q : quantities)
        if (!ghost_box(owned, dir, q.radius).empty())
          bytes += static_cast<double>(send_box(owned, dir, q.radius).volume()) * static_cast<double>(q.size);
      flow[static_cast<size_t>(l) * n + static_cast<size_t>(nid - first)] += bytes;
    }
  }
  return flow;
}

Result<std::vector<double>> slot_distance(int ranks, int per_rank, const std::vector<int>& gpu_of_slot,
                                          const std::vector<double>& bandwidth) {
  const size_t m = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(bandwidth.size()))));
  if (m * m != bandwidth.size())
    return Error{MPI_ERR_ARG, "dtmpi::stencil: the GPU bandwidth matrix has " + std::to_string(bandwidth.size()) +
                                  " entries, not a square number"};
  const size_t n = static_cast<size_t>(ranks) * static_cast<size_t>(per_rank);
  auto gpu = [&](size_t s) { return s < gpu_of_slot.size() ? gpu_of_slot[s] : -1; };
  // every slot's GPU, also one whose pairs never need the matrix (a rank
  // alone on its GPU): a matrix that does not name it is a mistake
  for (size_t s = 0; m > 0 && s < n; ++s)
    if (gpu(s) >= 0 && static_cast<size_t>(gpu(s)) >= m)
      return Error{MPI_ERR_ARG, "dtmpi::stencil: GPU " + std::to_string(gpu(s)) + " is outside the " + std::to_string(m) +
                                    "x" + std::to_string(m) + " bandwidth matrix"};
  std::vector<double> dist(n * n, 0);
  for (size_t s = 0; s < n; ++s)
    for (size_t t = 0; t < n; ++t) {
      const bool same_rank = s / static_cast<size_t>(per_rank) == t / static_cast<size_t>(per_rank);
      const int gs = gpu(s), gt = gpu(t);
      if (same_rank && gs == gt) continue;  // one rank, one GPU (or host): a direct copy
      double b = 1;
      if (m > 0 && gs >= 0 && gt >= 0) b = bandwidth[static_cast<size_t>(gs) * m + static_cast<size_t>(gt)];
      dist[s * n + t] = 1 / b;
    }
  return dist;
}

std::string describe_placement(const PlacementResult& r, int per_rank) {
  std::ostringstream o;
  o << "placement (subdomain:rank of the node)";
  for (size_t i = 0; i < r.slot_of.size(); ++i) o << " " << i << ":" << r.slot_of[i] / per_rank;
  o << ", cost " << r.cost << " (partition order " << r.identity_cost << ", "
    << (r.exhaustive ? "exhaustive" : "local search") << ")";
  return o.str();
}

}  // namespace dtmpi::stencil
