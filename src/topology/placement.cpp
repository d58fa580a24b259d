#include "topology/placement.hpp"

#include <algorithm>
#include <map>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "runtime/config.hpp"
#include "topology/partition.hpp"

namespace dtmpi::topology {

std::vector<int> place_vertices(const std::vector<Adjacency>& graph, const std::vector<int>& node_of_rank) {
  const int n = static_cast<int>(graph.size());
  std::map<int, std::vector<int>> nodes;  // node -> its ranks, ascending
  for (int r = 0; r < n; ++r) nodes[node_of_rank[static_cast<size_t>(r)]].push_back(r);
  const int per = static_cast<int>(nodes.begin()->second.size());
  for (const auto& [id, ranks] : nodes)
    if (static_cast<int>(ranks.size()) != per) return {};
  // the graph from both ends' declarations (an edge declared by both adds up,
  // which keeps the relative weights)
  std::vector<int> from, to;
  std::vector<int64_t> w;
  for (int v = 0; v < n; ++v) {
    const auto& a = graph[static_cast<size_t>(v)];
    for (size_t i = 0; i < a.destinations.size(); ++i) {
      from.push_back(v);
      to.push_back(a.destinations[i]);
      w.push_back(std::max(a.destination_weights[i], 0));
    }
    for (size_t i = 0; i < a.sources.size(); ++i) {
      from.push_back(a.sources[i]);
      to.push_back(v);
      w.push_back(std::max(a.source_weights[i], 0));
    }
  }
  auto group = partition_equal(Graph::from_edges(n, from, to, w), per);
  if (!group) return {};
  std::vector<std::vector<int>> members(nodes.size());
  for (int v = 0; v < n; ++v) members[static_cast<size_t>(group.value()[static_cast<size_t>(v)])].push_back(v);
  // group k to the k-th node; within a node, vertices in order to ranks in order
  std::vector<int> vertex_of_rank(static_cast<size_t>(n));
  size_t k = 0;
  for (const auto& [id, ranks] : nodes) {
    for (size_t i = 0; i < ranks.size(); ++i) vertex_of_rank[static_cast<size_t>(ranks[i])] = members[k][i];
    ++k;
  }
  return vertex_of_rank;
}

Status gather_adjacency(MPI_Comm comm, const Adjacency& mine, std::vector<Adjacency>& all) {
  int n = 0;
  REAL(MPI_Comm_size)(comm, &n);
  int deg[2] = {static_cast<int>(mine.sources.size()), static_cast<int>(mine.destinations.size())};
  std::vector<int> degs(static_cast<size_t>(2 * n));
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Allgather)(deg, 2, MPI_INT, degs.data(), 2, MPI_INT, comm));
  // one flat list per process: sources, source weights, destinations, destination weights
  std::vector<int> flat;
  flat.insert(flat.end(), mine.sources.begin(), mine.sources.end());
  flat.insert(flat.end(), mine.source_weights.begin(), mine.source_weights.end());
  flat.insert(flat.end(), mine.destinations.begin(), mine.destinations.end());
  flat.insert(flat.end(), mine.destination_weights.begin(), mine.destination_weights.end());
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  int total = 0;
  for (int r = 0; r < n; ++r) {
    counts[static_cast<size_t>(r)] = 2 * (degs[static_cast<size_t>(2 * r)] + degs[static_cast<size_t>(2 * r + 1)]);
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<int> everything(static_cast<size_t>(std::max(total, 1)));
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Allgatherv)(flat.data(), static_cast<int>(flat.size()), MPI_INT, everything.data(),
                                                counts.data(), displs.data(), MPI_INT, comm));
  all.assign(static_cast<size_t>(n), Adjacency{});
  for (int r = 0; r < n; ++r) {
    const int in = degs[static_cast<size_t>(2 * r)], out = degs[static_cast<size_t>(2 * r + 1)];
    const int* p = everything.data() + displs[static_cast<size_t>(r)];
    auto& a = all[static_cast<size_t>(r)];
    a.sources.assign(p, p + in);
    a.source_weights.assign(p + in, p + 2 * in);
    a.destinations.assign(p + 2 * in, p + 2 * in + out);
    a.destination_weights.assign(p + 2 * in + out, p + 2 * in + 2 * out);
  }
  return ok_status();
}

Status node_of_ranks(MPI_Comm comm, int ranks_per_node, std::vector<int>& node_of_rank) {
  int n = 0, me = 0;
  REAL(MPI_Comm_size)(comm, &n);
  REAL(MPI_Comm_rank)(comm, &me);
  node_of_rank.resize(static_cast<size_t>(n));
  if (ranks_per_node > 0) {
    for (int r = 0; r < n; ++r) node_of_rank[static_cast<size_t>(r)] = r / ranks_per_node;
    return ok_status();
  }
  MPI_Comm node;
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Comm_split_type)(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int leader = me;
  Status reduced = DTMPI_MPI_STATUS_REPORTED(REAL(MPI_Allreduce)(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node));
  REAL(MPI_Comm_free)(&node);
  DTMPI_TRY(reduced);
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Allgather)(&leader, 1, MPI_INT, node_of_rank.data(), 1, MPI_INT, comm));
  return ok_status();
}

Status agree_ranks_per_node(MPI_Comm comm) {
  const int64_t mine = runtime::config().ranks_per_node;
  // the smallest and (negated) the largest in one reduction
  int64_t asked[2] = {mine, -mine};
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(MPI_IN_PLACE, asked, 2, MPI_INT64_T, MPI_MIN, comm));
  if (asked[0] == -asked[1]) return ok_status();
  if (mine != asked[0])
    DTMPI_LOG(kWarn, "DTMPI_RANKS_PER_NODE differs between the ranks (%lld to %lld; this rank %lld): every rank uses "
              "%lld%s", static_cast<long long>(asked[0]), static_cast<long long>(-asked[1]),
              static_cast<long long>(mine), static_cast<long long>(asked[0]),
              asked[0] == 0 ? " (the nodes detected)" : "");
  runtime::set_agreed_ranks_per_node(asked[0]);
  return ok_status();
}

}  // namespace dtmpi::topology
