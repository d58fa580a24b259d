// Which rank of a node owns each of the node's subdomains (thesis section
// 4.4): the node's subdomains placed on its slots (ranks x subdomains per
// rank) by the quadratic assignment of placement.hpp, over the bytes the plan
// will move between them and the cost of a byte between the slots' GPUs.
// Subdomains of one rank on one GPU exchange by direct copy (cost 0), so with
// several subdomains per rank the placement keeps the heaviest neighbours
// together; with a GPU bandwidth matrix -- the program's, or measured here
// where a node's slots use two or more GPUs -- the best-connected GPUs get
// the neighbours that exchange most. Ties keep the partition's order, so with
// one subdomain per rank and every link alike nothing moves.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "runtime/peer_bandwidth.hpp"
#include "stencil/domain_impl.hpp"
#include "stencil/placement.hpp"

namespace dtmpi::stencil {
namespace {

// Beyond this many subdomains per node the O(n^3) swap passes would make
// realize() slow; such nodes keep the partition's order.
constexpr int kMaxPlaced = 64;

// What a rank tells the others about one of its slots.
struct SlotGpu {
  int ordinal = -1;     // -1: no GPU (host domain); -2: set_gpus() named one this process does not have
  uint64_t uuid = 0;    // device_uuid_digest(ordinal)
};

// Collective: every slot's GPU on every rank (rank r's slot k at r * per_rank + k).
Status gather_slot_gpus(const DomainImpl& d, std::vector<SlotGpu>& all) {
  std::vector<SlotGpu> mine(static_cast<size_t>(d.per_rank));
  if (d.memory == Memory::kDevice) {
    const std::vector<int> dev = slot_devices(d);
    for (size_t k = 0; k < mine.size(); ++k) {
      mine[k].ordinal = dev[k];
      if (dev[k] >= 0) mine[k].uuid = device_uuid_digest(dev[k]);
    }
  }
  all.assign(static_cast<size_t>(d.size) * mine.size(), {});
  const int bytes = static_cast<int>(mine.size() * sizeof(SlotGpu));
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(mine.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, d.user_comm));
  return ok_status();
}

// The same answer on every rank: set_gpus() on a host domain, or a device
// some rank does not have, fails realize() everywhere, naming the first rank.
Status check_gpus(const DomainImpl& d, const std::vector<SlotGpu>& all) {
  int bad = d.memory == Memory::kHost && !d.gpus_set.empty() ? d.rank : d.size, first = d.size;
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(&bad, &first, 1, MPI_INT, MPI_MIN, d.user_comm));
  if (first < d.size)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: set_gpus() on a host-memory domain (rank " + std::to_string(first) +
                                  "; use set_memory(Memory::kDevice))"};
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].ordinal == -2)
      return Error{MPI_ERR_ARG, "dtmpi::stencil: rank " + std::to_string(i / static_cast<size_t>(d.per_rank)) +
                                    " has no CUDA device for set_gpus()'s entry " +
                                    std::to_string(i % static_cast<size_t>(d.per_rank)) +
                                    " (an ordinal below 0 or beyond its device count, or no usable GPU)"};
  return ok_status();
}

// The GB/s matrix by ordinal (m x m, m = the largest ordinal + 1) of node
// `ranks`' GPUs, measured by the node's first rank where the node's slots
// use two or more GPUs that this rank numbers the way they do; empty where
// nothing was measured (every link alike). Collective over the communicator:
// every rank gets every node's matrix, so all place every node alike.
Status measured_bandwidth(const DomainImpl& d, const std::vector<std::vector<int>>& nodes,
                          const std::vector<SlotGpu>& slots, std::vector<std::vector<double>>& by_node) {
  int most = 0;
  for (const SlotGpu& s : slots) most = std::max(most, s.ordinal + 1);
  const size_t m = static_cast<size_t>(most), per = m * m;
  std::vector<double> mine(per, 0);  // 0: not measured
  for (const std::vector<int>& ranks : nodes) {
    if (ranks.front() != d.rank) continue;
    bool gpus_known = true;
    for (int r : ranks)
      for (int k = 0; k < d.per_rank; ++k) gpus_known = gpus_known && slots[static_cast<size_t>(r * d.per_rank + k)].ordinal >= 0;
    if (!gpus_known) break;  // a rank without a GPU: device_allocate() reports it on every rank
    std::set<int> used;
    bool same_numbering = true;
    for (int r : ranks)
      for (int k = 0; k < d.per_rank; ++k) {
        const SlotGpu& s = slots[static_cast<size_t>(r * d.per_rank + k)];
        used.insert(s.ordinal);
        same_numbering = same_numbering && s.uuid != 0 && s.uuid == device_uuid_digest(s.ordinal);
      }
    if (used.size() < 2) break;
    if (!same_numbering) {
      DTMPI_LOG(kWarn, "dtmpi::stencil: the ranks of this node name their GPUs differently (CUDA_VISIBLE_DEVICES?): "
                       "placement counts every link alike; set_gpu_bandwidth() to weigh them");
      break;
    }
    const std::vector<int> list(used.begin(), used.end());
    // once per process and set of GPUs: the links do not change (and each
    // measurement takes a context on GPUs this rank may not use, for a moment)
    static std::mutex mu;
    static std::map<std::vector<int>, std::vector<double>> measured;
    std::lock_guard lock(mu);
    auto it = measured.find(list);
    if (it == measured.end()) {
      auto bw = runtime::measure_peer_bandwidth(list);
      if (!bw) {  // the other ranks wait in the allgather below: every link alike then
        DTMPI_LOG(kWarn, "dtmpi::stencil: measuring the node's GPU links failed (%s): placement counts every link alike",
                  bw.error().what.c_str());
        break;
      }
      it = measured.emplace(list, bw.value()).first;
    }
    const std::vector<double>& bw = it->second;
    for (size_t i = 0; i < list.size(); ++i)
      for (size_t j = 0; j < list.size(); ++j)
        mine[static_cast<size_t>(list[i]) * m + static_cast<size_t>(list[j])] = bw[i * list.size() + j];
  }
  std::vector<double> all(per * static_cast<size_t>(d.size));
  if (per > 0)
    DTMPI_MPI_CHECK(REAL(MPI_Allgather)(mine.data(), static_cast<int>(per), MPI_DOUBLE, all.data(), static_cast<int>(per),
                                        MPI_DOUBLE, d.user_comm));
  by_node.assign(nodes.size(), {});
  for (size_t k = 0; k < nodes.size(); ++k) {
    const double* leader = all.data() + static_cast<size_t>(nodes[k].front()) * per;
    if (std::any_of(leader, leader + per, [](double b) { return b > 0; })) {
      by_node[k].assign(leader, leader + per);
      for (double& b : by_node[k])
        if (b <= 0) b = 1;  // a pair no slot of the node uses: never looked up
    }
  }
  return ok_status();
}

std::string bandwidth_text(const std::vector<double>& bw) {
  const size_t m = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(bw.size()))));
  std::string s;
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < m; ++j)
      if (bw[i * m + j] != 1 || i == j) {
        char one[64];
        std::snprintf(one, sizeof one, "%s%zu->%zu %.0f", s.empty() ? "" : ", ", i, j, bw[i * m + j]);
        s += one;
      }
  return s;
}

}  // namespace

Status assign_owners(DomainImpl& d, const std::vector<std::vector<int>>& nodes) {
  const Partition& p = *d.partition;
  const int per_node = p.per_node(), ranks = static_cast<int>(nodes.front().size());
  std::vector<SlotGpu> slots;
  DTMPI_TRY(gather_slot_gpus(d, slots));
  DTMPI_TRY(check_gpus(d, slots));
  const bool optimize = d.optimize_placement && per_node > 1 && per_node <= kMaxPlaced;
  // the links' bandwidth per node: the program's matrix for every node, or
  // each node's measured one (empty: every link alike)
  std::vector<std::vector<double>> bandwidth(nodes.size(), d.gpu_bandwidth);
  bool measured = false;
  if (optimize && d.memory == Memory::kDevice && d.gpu_bandwidth.empty()) {
    DTMPI_TRY(measured_bandwidth(d, nodes, slots, bandwidth));
    measured = std::any_of(bandwidth.begin(), bandwidth.end(), [](const auto& b) { return !b.empty(); });
  }
  std::vector<double> flow;
  if (optimize) {
    // node 0's flow stands for every node's: all nodes have the same local
    // grid, and their pieces differ by at most one point per axis
    std::vector<QuantityShape> shapes;
    for (size_t q = 0; q < d.quantities.size(); ++q) shapes.push_back({d.quantities[q].size, d.radius_of(q)});
    flow = node_flow(p, 0, d.periodic, d.radius, shapes);
  }
  d.owner.assign(static_cast<size_t>(p.count()), -1);
  d.slot_in_rank.assign(static_cast<size_t>(p.count()), 0);
  d.placement_text = optimize                  ? ""
                     : !d.optimize_placement ? "placement: partition order (set_placement(false))"
                     : per_node == 1         ? "placement: partition order (1 subdomain per node)"
                                             : "placement: partition order (" + std::to_string(per_node) +
                                                   " subdomains per node, more than " + std::to_string(kMaxPlaced) +
                                                   " are not placed)";
  // nodes whose slots have the same GPUs and links get the same placement: solved once
  std::map<std::pair<std::vector<int>, std::vector<double>>, PlacementResult> solved;
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::vector<int> slot_of(static_cast<size_t>(per_node));
    for (int l = 0; l < per_node; ++l) slot_of[static_cast<size_t>(l)] = l;
    bool mine = false;
    for (int r : nodes[k]) mine = mine || r == d.rank;
    if (optimize) {
      std::vector<int> gpu_of_slot;
      for (int r : nodes[k])
        for (int s = 0; s < d.per_rank; ++s) gpu_of_slot.push_back(slots[static_cast<size_t>(r * d.per_rank + s)].ordinal);
      auto key = std::make_pair(gpu_of_slot, bandwidth[k]);
      auto it = solved.find(key);
      if (it == solved.end()) {
        auto dist = slot_distance(ranks, d.per_rank, gpu_of_slot, bandwidth[k]);
        if (!dist) return dist.error();
        auto r = place(PlacementProblem{per_node, flow, dist.value()});
        if (!r) return r.error();
        it = solved.emplace(std::move(key), r.value()).first;
      }
      slot_of = it->second.slot_of;
      if (mine) {
        d.placement_text = describe_placement(it->second, d.per_rank);
        if (measured && !bandwidth[k].empty()) d.placement_text += ", GPU links measured (GB/s " + bandwidth_text(bandwidth[k]) + ")";
        if (d.rank == nodes[k].front()) DTMPI_LOG(kInfo, "dtmpi::stencil: node %zu: %s", k, d.placement_text.c_str());
      }
    }
    for (int l = 0; l < per_node; ++l) {
      const size_t id = static_cast<size_t>(static_cast<int>(k) * per_node + l);
      const int slot = slot_of[static_cast<size_t>(l)];
      d.owner[id] = nodes[k][static_cast<size_t>(slot / d.per_rank)];
      d.slot_in_rank[id] = slot % d.per_rank;
    }
  }
  return ok_status();
}

}  // namespace dtmpi::stencil
