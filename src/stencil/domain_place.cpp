// Which rank of a node owns each of the node's subdomains (thesis section
// 4.4): the node's subdomains placed on its slots (ranks x subdomains per
// rank) by the quadratic assignment of placement.hpp, over the bytes the plan
// will move between them and the cost of a byte between the slots' ranks.
// Subdomains of one rank exchange by direct copy (cost 0), so with several
// subdomains per rank the placement keeps the heaviest neighbours together;
// with a GPU bandwidth matrix the ranks whose GPUs are best connected get the
// neighbours that exchange most. Ties keep the partition's order, so with one
// subdomain per rank and no matrix (every rank alike) nothing moves.
#include <map>
#include <string>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "stencil/domain_impl.hpp"
#include "stencil/placement.hpp"

namespace dtmpi::stencil {
namespace {

// Beyond this many subdomains per node the O(n^3) swap passes would make
// realize() slow; such nodes keep the partition's order.
constexpr int kMaxPlaced = 64;

}  // namespace

Status assign_owners(DomainImpl& d, const std::vector<std::vector<int>>& nodes) {
  const Partition& p = *d.partition;
  const int per_node = p.per_node(), ranks = static_cast<int>(nodes.front().size());
  const bool optimize = d.optimize_placement && per_node > 1 && per_node <= kMaxPlaced;
  // the GPU of every rank, where the matrix needs them (the same decision on
  // every rank: the matrix and the memory kind are part of the signature)
  std::vector<int> gpu(static_cast<size_t>(d.size), -1);
  if (optimize && !d.gpu_bandwidth.empty() && d.memory == Memory::kDevice) {
    const int mine = current_device();
    DTMPI_MPI_CHECK(REAL(MPI_Allgather)(&mine, 1, MPI_INT, gpu.data(), 1, MPI_INT, d.user_comm));
  }
  std::vector<double> flow;
  if (optimize) {
    // node 0's flow stands for every node's: all nodes have the same local
    // grid, and their pieces differ by at most one point per axis
    std::vector<QuantityShape> shapes;
    for (size_t q = 0; q < d.quantities.size(); ++q) shapes.push_back({d.quantities[q].size, d.radius_of(q)});
    flow = node_flow(p, 0, d.periodic, d.radius, shapes);
  }
  // nodes whose ranks have the same GPUs get the same placement: solved once
  std::map<std::vector<int>, PlacementResult> solved;
  d.owner.assign(static_cast<size_t>(p.count()), -1);
  d.placement_text = optimize                  ? ""
                     : !d.optimize_placement ? "placement: partition order (set_placement(false))"
                     : per_node == 1         ? "placement: partition order (1 subdomain per node)"
                                             : "placement: partition order (" + std::to_string(per_node) +
                                                   " subdomains per node, more than " + std::to_string(kMaxPlaced) +
                                                   " are not placed)";
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::vector<int> slot_of(static_cast<size_t>(per_node));
    for (int l = 0; l < per_node; ++l) slot_of[static_cast<size_t>(l)] = l;
    bool mine = false;
    for (int r : nodes[k]) mine = mine || r == d.rank;
    if (optimize) {
      std::vector<int> key;
      for (int r : nodes[k]) key.push_back(gpu[static_cast<size_t>(r)]);
      auto it = solved.find(key);
      if (it == solved.end()) {
        auto dist = slot_distance(ranks, d.per_rank, key, d.memory == Memory::kDevice ? d.gpu_bandwidth : std::vector<double>{});
        if (!dist) return dist.error();
        auto r = place(PlacementProblem{per_node, flow, dist.value()});
        if (!r) return r.error();
        it = solved.emplace(key, r.value()).first;
      }
      slot_of = it->second.slot_of;
      if (mine) {
        d.placement_text = describe_placement(it->second, d.per_rank);
        if (d.rank == nodes[k].front())
          DTMPI_LOG(kInfo, "dtmpi::stencil: node %zu: %s", k, d.placement_text.c_str());
      }
    }
    for (int l = 0; l < per_node; ++l)
      d.owner[static_cast<size_t>(static_cast<int>(k) * per_node + l)] =
          nodes[k][static_cast<size_t>(slot_of[static_cast<size_t>(l)] / d.per_rank)];
  }
  return ok_status();
}

}  // namespace dtmpi::stencil
