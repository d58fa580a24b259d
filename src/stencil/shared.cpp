// Which peers of a host-memory domain exchange through shared memory
// (docs/stencil.md, "Shared memory"): those of this rank's node -- the nodes
// the partition used (MPI_COMM_TYPE_SHARED, or DTMPI_RANKS_PER_NODE's
// emulated ones, whose "other nodes" keep their messages). The segment and
// its channels are transport's (transport/node_channels.hpp); this file only
// decides, collectively, and wires the peers to them.
#include <cstdlib>
#include <string>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "runtime/config.hpp"
#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {

Status connect_node_peers(DomainImpl& d) {
  // the memory kind is part of realize()'s signature: every rank returns here alike
  if (d.memory != Memory::kHost) return ok_status();
  // the option may come from the environment, which ranks may see
  // differently: shared memory only if every rank wants it
  int want = d.shm_set ? *d.shm_set : runtime::config().stencil_shm, all_want = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(&want, &all_want, 1, MPI_INT, MPI_MIN, d.user_comm));
  if (!all_want) return ok_status();

  const int node = d.node_of_rank[static_cast<size_t>(d.rank)];
  std::vector<int> local_of(static_cast<size_t>(d.size), -1);  // rank -> rank in its node, rank order
  int node_size = 0;
  for (int r = 0; r < d.size; ++r)
    if (d.node_of_rank[static_cast<size_t>(r)] == node) local_of[static_cast<size_t>(r)] = node_size++;
  std::vector<size_t> inbound(static_cast<size_t>(node_size), 0);
  for (const Peer& p : d.peers)
    if (p.same_node) inbound[static_cast<size_t>(local_of[static_cast<size_t>(p.rank)])] = static_cast<size_t>(p.recv_bytes);

  MPI_Comm node_comm = MPI_COMM_NULL;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split)(d.user_comm, node, d.rank, &node_comm));
  auto channels = transport::NodeChannels::create(node_comm, inbound);
  const int freed = REAL(MPI_Comm_free)(&node_comm);
  if (!channels) return channels.error();
  DTMPI_MPI_CHECK(freed);
  // every node decided for itself; one decision for the whole domain, so a
  // failure anywhere gives messages everywhere (one behaviour to reason about)
  int ok = channels.value() != nullptr, all_ok = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(&ok, &all_ok, 1, MPI_INT, MPI_MIN, d.user_comm));
  if (!all_ok) {
    if (d.rank == 0)
      DTMPI_LOG(kInfo, "dtmpi::stencil: no shared-memory segment on some node: MPI messages to every peer");
    return ok_status();
  }
  d.channels = std::move(channels.value());
  for (Peer& p : d.peers) {
    if (!p.same_node) continue;
    const int local = local_of[static_cast<size_t>(p.rank)];
    p.shared = true;
    p.shm_in = d.channels->from(local);
    p.shm_out = d.channels->to(local);
    // both sides built the same plan: what this rank sends is what the peer
    // sized its buffer for
    if (p.shm_out.bytes != static_cast<size_t>(p.send_bytes))
      return Error{MPI_ERR_INTERN, "dtmpi::stencil: rank " + std::to_string(p.rank) + " expects " +
                                       std::to_string(p.shm_out.bytes) + " bytes in shared memory, this rank sends " +
                                       std::to_string(p.send_bytes)};
    // the message buffers are not used: the bytes go straight into the segment
    std::free(p.send_host);
    std::free(p.recv_host);
    p.send_host = p.recv_host = nullptr;
  }
  return ok_status();
}

}  // namespace dtmpi::stencil
