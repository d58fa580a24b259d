// The exchange plan: which ghost regions come from a subdomain of this rank
// (copied directly) and which from another rank (one message per peer rank
// each way, all its directions and quantities batched).
#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <tuple>

#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {

Box send_box(const Box& owned, Dim3 d, const Radius& r) {
  Box b = owned;
  for (int a = 0; a < 3; ++a) {
    // data moving towards +a fills the receiver's low ghost (width low(a))
    if (d[a] > 0) b.lo[a] = owned.hi[a] - r.low(a);
    if (d[a] < 0) b.hi[a] = owned.lo[a] + r.high(a);
  }
  return b;
}

Box ghost_box(const Box& owned, Dim3 d, const Radius& r) {
  Box b = owned;
  for (int a = 0; a < 3; ++a) {
    if (d[a] > 0) {
      b.lo[a] = owned.lo[a] - r.low(a);
      b.hi[a] = owned.lo[a];
    }
    if (d[a] < 0) {
      b.lo[a] = owned.hi[a];
      b.hi[a] = owned.hi[a] + r.high(a);
    }
  }
  return b;
}

int64_t DomainImpl::region_bytes(const Region& r) const {
  int64_t bytes = 0;
  for (size_t q = 0; q < quantities.size(); ++q) bytes += r.boxes[q].volume() * static_cast<int64_t>(quantities[q].size);
  return bytes;
}

namespace {
// The region of direction `dir` of subdomain `sub` (its send box, or the
// ghost box its neighbour's data lands in), for the domain and every quantity.
Region region(const DomainImpl& d, size_t sub, Dim3 dir, bool send) {
  const Box& owned = d.subs[sub].box();
  Region r{static_cast<int>(sub), send ? send_box(owned, dir, d.radius) : ghost_box(owned, dir, d.radius), {}};
  for (size_t q = 0; q < d.quantities.size(); ++q) {
    const Radius& rq = d.radius_of(q);
    r.boxes.push_back(send ? send_box(owned, dir, rq) : ghost_box(owned, dir, rq));
    if (ghost_box(owned, dir, rq).empty()) r.boxes.back() = Box{};  // q's stencil does not reach there
  }
  return r;
}
}  // namespace

Status build_plan(DomainImpl& d) {
  const Partition& p = *d.partition;
  std::map<int, size_t> local_index;  // subdomain id -> index in d.subs
  for (size_t i = 0; i < d.subs.size(); ++i) local_index[d.subs[i].id()] = i;
  // per peer rank, (sending id, direction) -> region, so both sides list the
  // same directions in the same order
  using Key = std::tuple<int, int>;
  std::map<int, std::map<Key, Region>> sends, recvs;
  const auto& dirs = directions();
  for (size_t i = 0; i < d.subs.size(); ++i) {
    const Subdomain& s = d.subs[i];
    for (size_t k = 0; k < dirs.size(); ++k) {
      const Dim3 dir = dirs[k];
      // data flows from s towards dir: s sends to neighbour(s, dir) ...
      if (!ghost_box(s.box(), dir, d.radius).empty()) {
        if (auto n = p.neighbour(s.grid_index(), dir, d.periodic)) {
          const int nid = p.id_of(*n);
          const int owner = d.owner[static_cast<size_t>(nid)];
          if (owner == d.rank) {
            d.copies.push_back({region(d, i, dir, true), region(d, local_index.at(nid), dir, false)});
          } else {
            sends[owner][{s.id(), static_cast<int>(k)}] = region(d, i, dir, true);
          }
        }
        // ... and receives what neighbour(s, -dir) sends towards dir
        const Dim3 back{-dir.x, -dir.y, -dir.z};
        if (auto n = p.neighbour(s.grid_index(), back, d.periodic)) {
          const int nid = p.id_of(*n);
          const int owner = d.owner[static_cast<size_t>(nid)];
          if (owner != d.rank) recvs[owner][{nid, static_cast<int>(k)}] = region(d, i, dir, false);
        }
      }
    }
  }
  // with a radius of 0 on one side, data may flow one way only between two
  // ranks: a peer is any rank this one sends to or receives from
  std::map<int, bool> ranks;
  for (auto& [rank, regions] : sends) ranks[rank] = true;
  for (auto& [rank, regions] : recvs) ranks[rank] = true;
  for (auto& [rank, unused] : ranks) {
    Peer peer;
    peer.rank = rank;
    peer.same_node = d.node_of_rank.empty() ||
                     d.node_of_rank[static_cast<size_t>(rank)] == d.node_of_rank[static_cast<size_t>(d.rank)];
    for (auto& [key, r] : sends[rank]) {
      peer.send.push_back(r);
      peer.send_bytes += d.region_bytes(r);
    }
    for (auto& [key, r] : recvs[rank]) {
      peer.recv.push_back(r);
      peer.recv_bytes += d.region_bytes(r);
    }
    if (peer.send_bytes > INT_MAX || peer.recv_bytes > INT_MAX)
      return Error{MPI_ERR_COUNT, "dtmpi::stencil: the exchange with rank " + std::to_string(rank) + " would be " +
                                      std::to_string(std::max(peer.send_bytes, peer.recv_bytes)) +
                                      " bytes in one message, more than MPI's int count; use more ranks"};
    d.peers.push_back(std::move(peer));
  }
  // the slowest messages first (thesis section 4.5.5): those to other nodes
  // (the network, or dtmpi's staged methods on the device path) before those
  // inside the node (shared memory, CUDA IPC), and within each the largest
  // first, so that the quick ones are issued while the slow ones are already
  // on their way
  std::stable_sort(d.peers.begin(), d.peers.end(), [](const Peer& a, const Peer& b) {
    if (a.same_node != b.same_node) return !a.same_node;
    return a.send_bytes > b.send_bytes;
  });
  d.requests.assign(2 * d.peers.size(), MPI_REQUEST_NULL);
  return ok_status();
}

}  // namespace dtmpi::stencil
