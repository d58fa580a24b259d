// coll/hierarchy.hpp
#include "coll/hierarchy.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "coll/comm_state.hpp"
#include "runtime/config.hpp"
#include "runtime/lifecycle.hpp"

namespace dtmpi::coll {

namespace {
constexpr int kHandOverTag = 7;  // on the private node communicator: no user message meets it
}  // namespace

Hierarchy::~Hierarchy() {
  // freed with their communicator (the state's attribute); at MPI_Finalize
  // the system MPI releases them itself
  if (!runtime::initialized()) return;
  if (leaders != MPI_COMM_NULL) REAL(MPI_Comm_free)(&leaders);
  if (node != MPI_COMM_NULL) REAL(MPI_Comm_free)(&node);
}

Result<std::unique_ptr<Hierarchy>> make_hierarchy(MPI_Comm comm) {
  int me = 0, n = 0, world = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  REAL(MPI_Comm_size)(comm, &n);
  REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &world);
  auto h = std::make_unique<Hierarchy>();
  const int64_t rpn = runtime::config().ranks_per_node;
  if (rpn > 0)
    DTMPI_MPI_CHECK(REAL(MPI_Comm_split)(comm, static_cast<int>(world / rpn), me, &h->node));
  else
    DTMPI_MPI_CHECK(REAL(MPI_Comm_split_type)(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &h->node));
  REAL(MPI_Comm_rank)(h->node, &h->node_rank);
  REAL(MPI_Comm_size)(h->node, &h->node_size);
  // Leader granularity (DTMPI_COLL_LEADERS = g): the node's ranks in g
  // contiguous groups of (nearly) equal size, each with its leader; from here
  // on a group is what the rest calls a node -- its ranks share memory, its
  // lowest rank meets the other leaders (those of its own node too) through
  // the system MPI. Each node splits its own communicator.
  // One node (its segment failed: the system MPI serves it, as without
  // groups) -- the same answer on every rank.
  if (h->node_size == n) return std::unique_ptr<Hierarchy>();
  // the node's ranks agree on g (the smallest any of them was given): ranks
  // given different values would split the node differently and hang
  int asked[2] = {static_cast<int>(runtime::config().coll_leaders), -static_cast<int>(runtime::config().coll_leaders)};
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(MPI_IN_PLACE, asked, 2, MPI_INT, MPI_MIN, h->node));
  if (asked[0] != -asked[1] && h->node_rank == 0)
    DTMPI_LOG(kWarn, "DTMPI_COLL_LEADERS differs between the ranks of a node (%d to %d): %d leaders per node", asked[0],
              -asked[1], asked[0]);
  const int groups = static_cast<int>(std::min<int64_t>(asked[0], h->node_size));
  if (groups > 1) {
    MPI_Comm group = MPI_COMM_NULL;
    const int mine_group = static_cast<int>(int64_t{h->node_rank} * groups / h->node_size);
    DTMPI_MPI_CHECK(REAL(MPI_Comm_split)(h->node, mine_group, h->node_rank, &group));
    DTMPI_MPI_CHECK(REAL(MPI_Comm_free)(&h->node));
    h->node = group;
    REAL(MPI_Comm_rank)(h->node, &h->node_rank);
    REAL(MPI_Comm_size)(h->node, &h->node_size);
  }
  // every rank's node, named by the node's lowest comm rank, and its rank there
  int mine[2] = {me, h->node_rank};
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(MPI_IN_PLACE, &mine[0], 1, MPI_INT, MPI_MIN, h->node));
  std::vector<int> all(2 * static_cast<size_t>(n));
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm));
  for (int r = 0; r < n; ++r)
    if (all[2 * static_cast<size_t>(r)] == r) h->leader_of.push_back(r);  // in increasing rank order
  h->node_of.resize(static_cast<size_t>(n));
  h->rank_in_node.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int lowest = all[2 * static_cast<size_t>(r)];
    h->node_of[static_cast<size_t>(r)] =
        static_cast<int>(std::lower_bound(h->leader_of.begin(), h->leader_of.end(), lowest) - h->leader_of.begin());
    h->rank_in_node[static_cast<size_t>(r)] = all[2 * static_cast<size_t>(r) + 1];
  }
  h->my_node = h->node_of[static_cast<size_t>(me)];
  h->blocks = true;
  for (int r = 1; r < n; ++r) {
    const int step = h->node_of[static_cast<size_t>(r)] - h->node_of[static_cast<size_t>(r - 1)];
    if (step != 0 && step != 1) h->blocks = false;
  }
  // the leaders in rank order: leader k's rank in `leaders` is k
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split)(comm, h->node_rank == 0 ? 0 : MPI_UNDEFINED, me, &h->leaders));
  const int nodes = static_cast<int>(h->leader_of.size());
  if (nodes <= 1 || nodes == n) return std::unique_ptr<Hierarchy>();  // one node, or one rank per node
  return h;
}

std::vector<int> hierarchy_leaders(MPI_Comm comm) {
  auto st = state_for(comm, false);
  if (!st || !st.value() || !st.value()->hier) return {};
  return st.value()->hier->leader_of;
}

namespace {

// The intra-node phases: dtmpi's algorithm select() names for the node's
// size, else the system MPI's on the node communicator (rooted at its rank 0).
Status node_call(const Hierarchy& h, CollOpKind op, const void* in, void* out, int count, MPI_Datatype type,
                 MPI_Op mop, int64_t bytes) {
  const Algorithm a = select(op, h.node_size, bytes);
  auto r = run_forced(op, a, in, out, count, type, mop, 0, h.node);
  if (!r) return r.error();
  if (r.value()) return ok_status();
  switch (op) {
    case CollOpKind::kBarrier: DTMPI_MPI_CHECK(REAL(MPI_Barrier)(h.node)); break;
    case CollOpKind::kBcast: DTMPI_MPI_CHECK(REAL(MPI_Bcast)(out, count, type, 0, h.node)); break;
    case CollOpKind::kGather: DTMPI_MPI_CHECK(REAL(MPI_Gather)(in, count, type, out, count, type, 0, h.node)); break;
    case CollOpKind::kScatter: DTMPI_MPI_CHECK(REAL(MPI_Scatter)(in, count, type, out, count, type, 0, h.node)); break;
    default: DTMPI_MPI_CHECK(REAL(MPI_Reduce)(in, out, count, type, mop, 0, h.node)); break;
  }
  return ok_status();
}

int64_t bytes_of(int count, MPI_Datatype type) {
  int size = 0;
  REAL(MPI_Type_size)(type, &size);
  return int64_t{count} * size;
}

}  // namespace

Result<bool> hier_barrier(const Hierarchy& h) {
  // the node's ranks have arrived; the leaders meet; the node is released
  DTMPI_TRY(node_call(h, CollOpKind::kBarrier, nullptr, nullptr, 0, MPI_BYTE, MPI_OP_NULL, 0));
  if (h.leaders != MPI_COMM_NULL) DTMPI_MPI_CHECK(REAL(MPI_Barrier)(h.leaders));
  DTMPI_TRY(node_call(h, CollOpKind::kBarrier, nullptr, nullptr, 0, MPI_BYTE, MPI_OP_NULL, 0));
  return true;
}

Result<bool> hier_bcast(const Hierarchy& h, void* buf, int count, MPI_Datatype type, int root) {
  const int root_node = h.node_of[static_cast<size_t>(root)], root_in_node = h.rank_in_node[static_cast<size_t>(root)];
  // a root that does not lead its node hands the data to the leader first
  if (h.my_node == root_node && root_in_node != 0) {
    if (h.node_rank == root_in_node)
      DTMPI_MPI_CHECK(REAL(MPI_Send)(buf, count, type, 0, kHandOverTag, h.node));
    else if (h.node_rank == 0)
      DTMPI_MPI_CHECK(REAL(MPI_Recv)(buf, count, type, root_in_node, kHandOverTag, h.node, MPI_STATUS_IGNORE));
  }
  if (h.leaders != MPI_COMM_NULL) DTMPI_MPI_CHECK(REAL(MPI_Bcast)(buf, count, type, root_node, h.leaders));
  DTMPI_TRY(node_call(h, CollOpKind::kBcast, nullptr, buf, count, type, MPI_OP_NULL, bytes_of(count, type)));
  return true;
}

Result<bool> hier_reduce(const Hierarchy& h, const void* in, void* out, int count, MPI_Datatype type, MPI_Op op,
                         int root, int64_t elem, bool commutative) {
  // the nodes' partial results combine in node order: the rank order only
  // where every node is a block of consecutive ranks
  if (!commutative && !h.blocks) return false;
  const size_t bytes = static_cast<size_t>(count) * static_cast<size_t>(elem);
  std::vector<char> part(std::max<size_t>(bytes, 1));
  DTMPI_TRY(node_call(h, CollOpKind::kReduce, in, part.data(), count, type, op, static_cast<int64_t>(bytes)));
  if (root < 0) {  // Allreduce: the leaders combine, each node gets the result from its leader
    if (h.leaders != MPI_COMM_NULL) DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(part.data(), out, count, type, op, h.leaders));
    DTMPI_TRY(node_call(h, CollOpKind::kBcast, nullptr, out, count, type, MPI_OP_NULL, static_cast<int64_t>(bytes)));
    return true;
  }
  const int root_node = h.node_of[static_cast<size_t>(root)], root_in_node = h.rank_in_node[static_cast<size_t>(root)];
  // (not MPI_IN_PLACE: MPICH 4.0.2's MPI_Reduce crashes with it at a root
  // other than 0)
  std::vector<char> whole(h.leaders != MPI_COMM_NULL && h.my_node == root_node ? std::max<size_t>(bytes, 1) : 0);
  if (h.leaders != MPI_COMM_NULL)
    DTMPI_MPI_CHECK(REAL(MPI_Reduce)(part.data(), whole.data(), count, type, op, root_node, h.leaders));
  if (h.my_node != root_node) return true;
  if (root_in_node == 0) {
    if (h.node_rank == 0) std::memcpy(out, whole.data(), bytes);
  } else if (h.node_rank == 0) {
    DTMPI_MPI_CHECK(REAL(MPI_Send)(whole.data(), count, type, root_in_node, kHandOverTag, h.node));
  } else if (h.node_rank == root_in_node) {
    DTMPI_MPI_CHECK(REAL(MPI_Recv)(out, count, type, 0, kHandOverTag, h.node, MPI_STATUS_IGNORE));
  }
  return true;
}

namespace {
// The most ranks any node has (the same on every rank).
int64_t largest_node(const Hierarchy& h) {
  std::vector<int64_t> size(h.leader_of.size(), 0);
  for (int node : h.node_of) ++size[static_cast<size_t>(node)];
  return size.empty() ? 0 : *std::max_element(size.begin(), size.end());
}
}  // namespace

bool aggregated_fits(const Hierarchy& h, int64_t block) {
  const int64_t n = static_cast<int64_t>(h.node_of.size());
  return block > 0 && block <= kMaxAggregatedBytes && largest_node(h) * n <= kMaxAggregatedBytes / block;
}

bool aggregated_v_fits(const Hierarchy& h, int64_t largest_rank_bytes) {
  // a leader's buffers hold its node's ranks' bytes each
  return largest_rank_bytes >= 0 && largest_rank_bytes <= kMaxAggregatedBytes &&
         largest_node(h) * largest_rank_bytes <= kMaxAggregatedBytes;
}

Result<bool> hier_alltoall(const Hierarchy& h, const void* in, void* out, int64_t block) {
  if (!aggregated_fits(h, block)) return false;
  const int n = static_cast<int>(h.node_of.size()), nodes = static_cast<int>(h.leader_of.size());
  // each node's ranks in node order (the node communicators keep rank order)
  std::vector<std::vector<int>> members(static_cast<size_t>(nodes));
  for (int r = 0; r < n; ++r) members[static_cast<size_t>(h.node_of[static_cast<size_t>(r)])].push_back(r);
  const size_t b = static_cast<size_t>(block), mine = static_cast<size_t>(h.node_size);
  const bool leader = h.leaders != MPI_COMM_NULL;
  // 1. the node's send buffers at its leader: gathered[i][j], from member i to comm rank j
  std::vector<char> gathered(leader ? mine * static_cast<size_t>(n) * b : 0);
  const int row = n * static_cast<int>(block);  // <= kMaxAggregatedBytes
  DTMPI_TRY(node_call(h, CollOpKind::kGather, in, gathered.data(), row, MPI_BYTE, MPI_OP_NULL, row));
  std::vector<char> scattered(leader ? mine * static_cast<size_t>(n) * b : 0);
  if (leader) {
    // 2. one message per node, in node order: from each member i of this
    // node, its blocks to node d's members in their order
    std::vector<char> outgoing(gathered.size()), incoming(gathered.size());
    std::vector<int> sc(static_cast<size_t>(nodes)), sd(static_cast<size_t>(nodes)), rc(sc.size()), rd(sd.size());
    size_t at = 0, from = 0;
    for (int d = 0; d < nodes; ++d) {
      const auto& dst = members[static_cast<size_t>(d)];
      sd[static_cast<size_t>(d)] = static_cast<int>(at);
      for (size_t i = 0; i < mine; ++i)
        for (int j : dst) {
          std::memcpy(outgoing.data() + at, gathered.data() + (i * static_cast<size_t>(n) + static_cast<size_t>(j)) * b, b);
          at += b;
        }
      sc[static_cast<size_t>(d)] = static_cast<int>(mine * dst.size() * b);
      // from node d: each of its members' blocks to this node's members
      rd[static_cast<size_t>(d)] = static_cast<int>(from);
      rc[static_cast<size_t>(d)] = static_cast<int>(dst.size() * mine * b);
      from += dst.size() * mine * b;
    }
    DTMPI_MPI_CHECK(REAL(MPI_Alltoallv)(outgoing.data(), sc.data(), sd.data(), MPI_BYTE, incoming.data(), rc.data(),
                                        rd.data(), MPI_BYTE, h.leaders));
    // 3. for member j of this node, its n blocks in comm rank order: the one
    // from rank src came from src's node, as the i-th of its members
    for (size_t j = 0; j < mine; ++j)
      for (int src = 0; src < n; ++src) {
        const int s_node = h.node_of[static_cast<size_t>(src)];
        const size_t i = static_cast<size_t>(h.rank_in_node[static_cast<size_t>(src)]);
        const size_t at_s = static_cast<size_t>(rd[static_cast<size_t>(s_node)]) + (i * mine + j) * b;
        std::memcpy(scattered.data() + (j * static_cast<size_t>(n) + static_cast<size_t>(src)) * b,
                    incoming.data() + at_s, b);
      }
  }
  // 4. every rank its blocks from its leader
  DTMPI_TRY(node_call(h, CollOpKind::kScatter, scattered.data(), out, row, MPI_BYTE, MPI_OP_NULL, row));
  return true;
}

}  // namespace dtmpi::coll
