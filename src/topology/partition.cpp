#include "topology/partition.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#ifdef DTMPI_HAVE_METIS
#include <metis.h>
#endif

namespace dtmpi::topology {

Graph Graph::from_edges(int n, const std::vector<int>& from, const std::vector<int>& to,
                        const std::vector<int64_t>& w) {
  std::vector<std::map<int, int64_t>> nb(static_cast<size_t>(n));
  for (size_t e = 0; e < from.size(); ++e) {
    if (from[e] == to[e]) continue;  // never crosses groups
    nb[static_cast<size_t>(from[e])][to[e]] += w[e];
    nb[static_cast<size_t>(to[e])][from[e]] += w[e];
  }
  Graph g;
  g.n = n;
  for (int v = 0; v < n; ++v) {
    for (auto [u, wt] : nb[static_cast<size_t>(v)]) {
      g.adj.push_back(u);
      g.weight.push_back(wt);
    }
    g.xadj.push_back(static_cast<int>(g.adj.size()));
  }
  return g;
}

int64_t cut_weight(const Graph& g, const std::vector<int>& group) {
  int64_t cut = 0;
  for (int v = 0; v < g.n; ++v)
    for (int e = g.xadj[v]; e < g.xadj[v + 1]; ++e)
      if (group[static_cast<size_t>(v)] != group[static_cast<size_t>(g.adj[e])]) cut += g.weight[e];
  return cut / 2;
}

bool have_metis() {
#ifdef DTMPI_HAVE_METIS
  return true;
#else
  return false;
#endif
}

namespace {

// Weight from v into each group it touches.
void links(const Graph& g, const std::vector<int>& group, int v, std::map<int, int64_t>& out) {
  out.clear();
  for (int e = g.xadj[v]; e < g.xadj[v + 1]; ++e) out[group[static_cast<size_t>(g.adj[e])]] += g.weight[e];
}

// Initial partition (the candidate besides METIS's, or instead of it): grow each group by BFS from the lowest
// unassigned vertex, preferring the most strongly connected candidate.
std::vector<int> grow_groups(const Graph& g, const std::vector<int>& cap) {
  std::vector<int> group(static_cast<size_t>(g.n), -1);
  int next = 0;
  for (size_t k = 0; k < cap.size(); ++k) {
    while (next < g.n && group[static_cast<size_t>(next)] >= 0) ++next;
    if (next >= g.n) break;
    std::map<int, int64_t> gain;  // candidate -> weight into the group
    gain[next] = 0;
    for (int taken = 0; taken < cap[k] && !gain.empty(); ++taken) {
      auto best = std::max_element(gain.begin(), gain.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      const int v = best->first;
      gain.erase(best);
      group[static_cast<size_t>(v)] = static_cast<int>(k);
      for (int e = g.xadj[v]; e < g.xadj[v + 1]; ++e)
        if (group[static_cast<size_t>(g.adj[e])] < 0) gain[g.adj[e]] += g.weight[e];
      if (gain.empty() && taken + 1 < cap[k]) {  // disconnected: continue from any free vertex
        for (int u = 0; u < g.n; ++u)
          if (group[static_cast<size_t>(u)] < 0) {
            gain[u] = 0;
            break;
          }
      }
    }
  }
  return group;
}

// Moves vertices out of groups above capacity into groups below, each time
// the move that loses the least (or gains the most) connectivity: targets are
// the under-full groups a vertex is linked to, or else any under-full group.
void balance_exact(const Graph& g, std::vector<int>& group, const std::vector<int>& cap) {
  std::vector<std::vector<int>> members(cap.size());
  for (int v = 0; v < g.n; ++v) members[static_cast<size_t>(group[static_cast<size_t>(v)])].push_back(v);
  std::set<int> under;
  std::vector<int> over;
  for (size_t k = 0; k < cap.size(); ++k) {
    const int sz = static_cast<int>(members[k].size());
    if (sz < cap[k]) under.insert(static_cast<int>(k));
    if (sz > cap[k]) over.push_back(static_cast<int>(k));
  }
  std::map<int, int64_t> l;
  for (int from : over) {
    auto& mem = members[static_cast<size_t>(from)];
    while (static_cast<int>(mem.size()) > cap[static_cast<size_t>(from)]) {
      size_t best_i = 0;
      int best_to = *under.begin();
      int64_t best_gain = INT64_MIN;
      for (size_t i = 0; i < mem.size(); ++i) {
        links(g, group, mem[i], l);
        const int64_t own = l.count(from) ? l[from] : 0;
        for (auto [k, w] : l)
          if (under.count(k) && w - own > best_gain) best_gain = w - own, best_i = i, best_to = k;
        if (-own > best_gain) best_gain = -own, best_i = i, best_to = *under.begin();
      }
      const int v = mem[best_i];
      mem.erase(mem.begin() + static_cast<long>(best_i));
      group[static_cast<size_t>(v)] = best_to;
      auto& dst = members[static_cast<size_t>(best_to)];
      dst.push_back(v);
      if (static_cast<int>(dst.size()) >= cap[static_cast<size_t>(best_to)]) under.erase(best_to);
    }
  }
}

// Pairwise swaps between groups while one lowers the cut (sizes unchanged):
// for each vertex, its best swap partner among the vertices of the group it is
// most attracted to. Bounded passes.
void refine_swaps(const Graph& g, std::vector<int>& group) {
  std::map<int, int64_t> lv, lu;
  auto weight_between = [&](int a, int b) {
    int64_t w = 0;
    for (int e = g.xadj[a]; e < g.xadj[a + 1]; ++e)
      if (g.adj[e] == b) w += g.weight[e];
    return w;
  };
  for (int pass = 0; pass < 8; ++pass) {
    bool improved = false;
    for (int v = 0; v < g.n; ++v) {
      links(g, group, v, lv);
      const int pv = group[static_cast<size_t>(v)];
      const int64_t own_v = lv.count(pv) ? lv[pv] : 0;
      for (auto [q, wq] : lv) {
        if (q == pv || wq <= own_v) continue;  // only groups v is drawn to
        // the best partner u in q: gain = (lv[q] - own_v) + (lu[pv] - own_u) - 2 w(v,u)
        int best_u = -1;
        int64_t best = 0;
        for (int e = g.xadj[v]; e < g.xadj[v + 1]; ++e) {
          const int u = g.adj[e];
          if (group[static_cast<size_t>(u)] != q) continue;
          links(g, group, u, lu);
          const int64_t gain = (wq - own_v) + ((lu.count(pv) ? lu[pv] : 0) - (lu.count(q) ? lu[q] : 0)) -
                               2 * weight_between(v, u);
          if (gain > best) best = gain, best_u = u;
        }
        if (best_u >= 0) {
          std::swap(group[static_cast<size_t>(v)], group[static_cast<size_t>(best_u)]);
          improved = true;
          break;
        }
      }
    }
    if (!improved) return;
  }
}

#ifdef DTMPI_HAVE_METIS
// METIS k-way (recursive = false) or recursive bisection into `cap`-sized parts.
std::vector<int> metis_parts(const Graph& g, const std::vector<int>& cap, bool recursive) {
  if (g.adj.empty()) return {};
  const int groups = static_cast<int>(cap.size());
  idx_t n = g.n, ncon = 1, nparts = groups, objval = 0;
  std::vector<idx_t> xadj(g.xadj.begin(), g.xadj.end()), adj(g.adj.begin(), g.adj.end()), part(static_cast<size_t>(g.n));
  // METIS sums weights in 32 bits while coarsening: scale them to at most 10^4
  // per edge (relative weights are what matter; each stays >= 1)
  const int64_t wmax = std::max<int64_t>(1, *std::max_element(g.weight.begin(), g.weight.end()));
  std::vector<idx_t> adjw(g.weight.size());
  for (size_t i = 0; i < g.weight.size(); ++i)
    adjw[i] = static_cast<idx_t>(std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(g.weight[i]) * 1e4 /
                                                                            static_cast<double>(wmax))));
  std::vector<real_t> tpw(static_cast<size_t>(groups));
  for (int k = 0; k < groups; ++k) tpw[static_cast<size_t>(k)] = static_cast<real_t>(cap[static_cast<size_t>(k)]) / g.n;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_UFACTOR] = 1;  // 0.1% imbalance; the balancing pass makes it exact
  options[METIS_OPTION_SEED] = 7;
  const int rc = recursive ? METIS_PartGraphRecursive(&n, &ncon, xadj.data(), adj.data(), nullptr, nullptr,
                                                      adjw.data(), &nparts, tpw.data(), nullptr, options, &objval,
                                                      part.data())
                           : METIS_PartGraphKway(&n, &ncon, xadj.data(), adj.data(), nullptr, nullptr, adjw.data(),
                                                 &nparts, tpw.data(), nullptr, options, &objval, part.data());
  if (rc != METIS_OK) return {};
  return std::vector<int>(part.begin(), part.end());
}
#endif

}  // namespace

Result<std::vector<int>> partition_equal(const Graph& g, int group_size) {
  if (group_size <= 0) return Error{kErrUnsupported, "group size must be positive"};
  const int groups = (g.n + group_size - 1) / group_size;
  std::vector<int> cap(static_cast<size_t>(groups), group_size);
  if (g.n % group_size) cap.back() = g.n % group_size;
  std::vector<int> in_order(static_cast<size_t>(g.n));  // the default placement: consecutive ranks together
  for (int v = 0; v < g.n; ++v) in_order[static_cast<size_t>(v)] = v / group_size;
  if (groups <= 1 || group_size == 1) return in_order;  // nothing to choose
  // Candidates, each balanced to exact sizes and refined; the lowest cut wins.
  // The default placement is one of them, so the result is never worse.
  std::vector<std::vector<int>> candidates = {in_order};
#ifdef DTMPI_HAVE_METIS
  candidates.push_back(metis_parts(g, cap, false));
  candidates.push_back(metis_parts(g, cap, true));
#endif
  candidates.push_back(grow_groups(g, cap));
  std::vector<int> best;
  int64_t best_cut = -1;
  for (auto& c : candidates) {
    if (c.size() != static_cast<size_t>(g.n)) continue;
    balance_exact(g, c, cap);
    refine_swaps(g, c);
    const int64_t cut = cut_weight(g, c);
    if (best_cut < 0 || cut < best_cut) best_cut = cut, best = std::move(c);
  }
  return best;
}

}  // namespace dtmpi::topology
