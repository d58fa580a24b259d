// The node-aggregated Alltoallv (coll/hierarchy.hpp): blocks of their own
// sizes, which only their sender and receiver know -- so each leader learns
// its node's send sizes (to cut the outgoing messages) and receive sizes (to
// cut the incoming ones) with one gather on the node.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "base/system_mpi.hpp"
#include "coll/hierarchy.hpp"

namespace dtmpi::coll {

namespace {

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

}  // namespace

Result<bool> hier_alltoallv(const Hierarchy& h, const char* in, const Blocks& sends, char* out, const Blocks& recvs) {
  const int n = static_cast<int>(h.node_of.size()), nodes = static_cast<int>(h.leader_of.size());
  const size_t un = static_cast<size_t>(n), mine = static_cast<size_t>(h.node_size);
  const bool leader = h.leaders != MPI_COMM_NULL;
  std::vector<std::vector<int>> members(static_cast<size_t>(nodes));
  for (int r = 0; r < n; ++r) members[static_cast<size_t>(h.node_of[static_cast<size_t>(r)])].push_back(r);

  // this rank's blocks back to back in destination order, and its sizes:
  // sizes[0..n) sent to rank j, sizes[n..2n) received from rank j
  std::vector<int64_t> sizes(2 * un);
  int64_t total_out = 0, total_in = 0;
  for (size_t j = 0; j < un; ++j) {
    sizes[j] = sends.bytes[j];
    sizes[un + j] = recvs.bytes[j];
    total_out += sends.bytes[j];
    total_in += recvs.bytes[j];
  }
  std::vector<char> packed(static_cast<size_t>(std::max<int64_t>(total_out, 1)));
  for (size_t j = 0, at = 0; j < un; ++j) {
    if (sends.bytes[j] > 0)
      std::memcpy(packed.data() + at, in + sends.offset[j], static_cast<size_t>(sends.bytes[j]));
    at += static_cast<size_t>(sends.bytes[j]);
  }

  // 1. at the leader: every member's sizes, then its blocks
  std::vector<int64_t> all_sizes(leader ? 2 * un * mine : 0);
  DTMPI_MPI_CHECK(REAL(MPI_Gather)(sizes.data(), 2 * n, MPI_INT64_T, all_sizes.data(), 2 * n, MPI_INT64_T, 0, h.node));
  auto sent = [&](size_t i, size_t j) { return all_sizes[i * 2 * un + j]; };      // member i -> comm rank j
  auto received = [&](size_t i, size_t j) { return all_sizes[i * 2 * un + un + j]; };  // member i <- comm rank j
  std::vector<int> member_out(leader ? mine : 0), member_in(leader ? mine : 0);
  for (size_t i = 0; leader && i < mine; ++i)
    for (size_t j = 0; j < un; ++j) {
      member_out[i] += static_cast<int>(sent(i, j));
      member_in[i] += static_cast<int>(received(i, j));
    }
  const std::vector<int> out_at = displacements(member_out), in_at = displacements(member_in);
  std::vector<char> gathered(leader ? static_cast<size_t>(std::accumulate(member_out.begin(), member_out.end(), 0)) + 1
                                    : 0);
  DTMPI_MPI_CHECK(REAL(MPI_Gatherv)(packed.data(), static_cast<int>(total_out), MPI_BYTE, gathered.data(),
                                    member_out.data(), out_at.data(), MPI_BYTE, 0, h.node));

  std::vector<char> scattered(leader ? static_cast<size_t>(std::accumulate(member_in.begin(), member_in.end(), 0)) + 1
                                     : 0);
  if (leader) {
    // where member i's block to rank j lies in `gathered`
    std::vector<int64_t> from(mine * un);
    for (size_t i = 0; i < mine; ++i)
      for (size_t j = 0, at = static_cast<size_t>(out_at[i]); j < un; ++j) {
        from[i * un + j] = static_cast<int64_t>(at);
        at += static_cast<size_t>(sent(i, j));
      }
    // 2. one message per node: from each member i, its blocks to node d's
    // members in their order; the incoming one from node s, each of s's
    // members' blocks to this node's members (their sizes: this node's
    // receive sizes)
    std::vector<int> sc(static_cast<size_t>(nodes), 0), rc(static_cast<size_t>(nodes), 0);
    for (int d = 0; d < nodes; ++d)
      for (int r : members[static_cast<size_t>(d)])
        for (size_t i = 0; i < mine; ++i) {
          sc[static_cast<size_t>(d)] += static_cast<int>(sent(i, static_cast<size_t>(r)));
          rc[static_cast<size_t>(d)] += static_cast<int>(received(i, static_cast<size_t>(r)));
        }
    const std::vector<int> sd = displacements(sc), rd = displacements(rc);
    std::vector<char> outgoing(static_cast<size_t>(sd.back() + sc.back()) + 1);
    std::vector<char> incoming(static_cast<size_t>(rd.back() + rc.back()) + 1);
    for (int d = 0; d < nodes; ++d) {
      size_t at = static_cast<size_t>(sd[static_cast<size_t>(d)]);
      for (size_t i = 0; i < mine; ++i)
        for (int r : members[static_cast<size_t>(d)]) {
          const size_t b = static_cast<size_t>(sent(i, static_cast<size_t>(r)));
          if (b > 0) std::memcpy(outgoing.data() + at, gathered.data() + from[i * un + static_cast<size_t>(r)], b);
          at += b;
        }
    }
    DTMPI_MPI_CHECK(REAL(MPI_Alltoallv)(outgoing.data(), sc.data(), sd.data(), MPI_BYTE, incoming.data(), rc.data(),
                                        rd.data(), MPI_BYTE, h.leaders));
    // 3. for member k of this node, its blocks from every rank in comm rank
    // order: the one from rank src came in node s's message, after the
    // blocks of s's earlier members (to all of this node) and of src's to
    // this node's earlier members
    std::vector<int64_t> at_in(un * mine);
    for (int s = 0; s < nodes; ++s) {
      size_t at = static_cast<size_t>(rd[static_cast<size_t>(s)]);
      for (int src : members[static_cast<size_t>(s)])
        for (size_t k = 0; k < mine; ++k) {
          at_in[static_cast<size_t>(src) * mine + k] = static_cast<int64_t>(at);
          at += static_cast<size_t>(received(k, static_cast<size_t>(src)));
        }
    }
    for (size_t k = 0; k < mine; ++k)
      for (size_t src = 0, at = static_cast<size_t>(in_at[k]); src < un; ++src) {
        const size_t b = static_cast<size_t>(received(k, src));
        if (b > 0) std::memcpy(scattered.data() + at, incoming.data() + at_in[src * mine + k], b);
        at += b;
      }
  }
  // 4. every rank its blocks, then each into its place
  std::vector<char> mine_in(static_cast<size_t>(std::max<int64_t>(total_in, 1)));
  DTMPI_MPI_CHECK(REAL(MPI_Scatterv)(scattered.data(), member_in.data(), in_at.data(), MPI_BYTE, mine_in.data(),
                                     static_cast<int>(total_in), MPI_BYTE, 0, h.node));
  for (size_t j = 0, at = 0; j < un; ++j) {
    if (recvs.bytes[j] > 0) std::memcpy(out + recvs.offset[j], mine_in.data() + at, static_cast<size_t>(recvs.bytes[j]));
    at += static_cast<size_t>(recvs.bytes[j]);
  }
  return true;
}

}  // namespace dtmpi::coll
