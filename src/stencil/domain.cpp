// DistributedDomain: configuration, realize() (validated collectively, so
// that bad input fails on every rank with the same message instead of
// leaving some ranks waiting), the subdomains' regions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "base/system_mpi.hpp"
#include "runtime/config.hpp"
#include "stencil/domain_impl.hpp"
#include "topology/placement.hpp"

namespace dtmpi::stencil {
namespace {

// Every message names the library: errors from below (CUDA, MPI) get the prefix.
std::string named(const std::string& what) {
  return what.rfind("dtmpi::stencil", 0) == 0 ? what : "dtmpi::stencil: " + what;
}
[[noreturn]] void fail(const Error& e) { throw StencilError(named(e.what)); }
template <class T>
void check(const Result<T>& s) {
  if (!s) fail(s.error());
}
std::string text(Dim3 v) { return std::to_string(v.x) + "x" + std::to_string(v.y) + "x" + std::to_string(v.z); }

// Everything realize() depends on, as text: ranks compare it before anything
// else, so a mismatch is one clear message instead of a hang or wrong data.
std::string signature(const DomainImpl& d) {
  std::string s = "extent " + text(d.extent) + ", radius";
  for (int a = 0; a < 3; ++a) s += " " + std::to_string(d.radius.low(a)) + "/" + std::to_string(d.radius.high(a));
  s += std::string(", periodic ") + (d.periodic[0] ? "x" : "-") + (d.periodic[1] ? "y" : "-") + (d.periodic[2] ? "z" : "-");
  s += d.memory == Memory::kHost ? ", host" : ", device";
  s += ", " + std::to_string(d.per_rank) + " subdomain(s) per rank, quantities [";
  for (size_t i = 0; i < d.quantities.size(); ++i) {
    s += (i ? ", " : "") + d.quantities[i].name + ":" + std::to_string(d.quantities[i].size) + "B";
    if (const auto& r = d.quantities[i].radius)
      for (int a = 0; a < 3; ++a) s += (a ? "," : " radius ") + std::to_string(r->low(a)) + "/" + std::to_string(r->high(a));
  }
  s += "]";
  if (!d.optimize_placement) s += ", placement off";
  if (d.overlap_blocks_set) s += ", overlap blocks per SM " + std::to_string(*d.overlap_blocks_set);
  if (!d.gpu_bandwidth.empty()) {
    s += ", GPU bandwidth [";
    for (size_t i = 0; i < d.gpu_bandwidth.size(); ++i) s += (i ? " " : "") + std::to_string(d.gpu_bandwidth[i]);
    s += "]";
  }
  return s;
}

// Collective: every rank's signature; an Error on every rank unless all agree.
Status same_everywhere(const DomainImpl& d) {
  constexpr size_t kLen = 1024;
  std::string mine = signature(d);
  if (mine.size() > kLen - 1) {  // too long to send whole: its hash decides, its start is shown
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : mine) h = (h ^ c) * 1099511628211ull;
    const std::string tag = " ... (hash " + std::to_string(h) + ")";
    mine = mine.substr(0, kLen - 1 - tag.size()) + tag;
  }
  mine.resize(kLen - 1, ' ');
  std::vector<char> all(kLen * static_cast<size_t>(d.size));
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(mine.c_str(), static_cast<int>(kLen), MPI_CHAR, all.data(), static_cast<int>(kLen),
                                      MPI_CHAR, d.user_comm));
  auto of = [&](int r) {
    std::string s(all.data() + static_cast<size_t>(r) * kLen);
    return s.erase(s.find_last_not_of(' ') + 1);
  };
  for (int r = 1; r < d.size; ++r)
    if (std::strcmp(all.data(), all.data() + static_cast<size_t>(r) * kLen) != 0)
      return Error{MPI_ERR_ARG, "dtmpi::stencil: realize() called with different configurations: rank 0 has " + of(0) +
                                    "; rank " + std::to_string(r) + " has " + of(r)};
  return ok_status();
}

// Checks that depend only on the (now identical) configuration.
Status valid(const DomainImpl& d) {
  static const char* kAxis = "xyz";
  if (d.quantities.empty()) return Error{MPI_ERR_ARG, "dtmpi::stencil: realize() with no quantity added"};
  if (d.peer_path == PeerPath::kHost)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: set_peer_path(PeerPath::kHost): kHost is what stats() says of a "
                              "host-memory domain, not a choice (kAuto, kStaged or kDevice)"};
  if (d.peer_path == PeerPath::kDevice && d.memory == Memory::kHost)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: set_peer_path(PeerPath::kDevice) on a host-memory domain (the device "
                              "path posts device buffers; use set_memory(Memory::kDevice))"};
  if (d.per_rank < 1)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: " + std::to_string(d.per_rank) + " subdomains per rank; at least 1"};
  if (d.overlap_blocks_set && (*d.overlap_blocks_set < 0 || *d.overlap_blocks_set > 32))
    return Error{MPI_ERR_ARG, "dtmpi::stencil: set_overlap_blocks_per_sm(" + std::to_string(*d.overlap_blocks_set) +
                                  "): 0 (a block per tile) to 32 blocks per SM"};
  if (!d.gpu_bandwidth.empty()) {
    const size_t m = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(d.gpu_bandwidth.size()))));
    if (m * m != d.gpu_bandwidth.size())
      return Error{MPI_ERR_ARG, "dtmpi::stencil: set_gpu_bandwidth() with " + std::to_string(d.gpu_bandwidth.size()) +
                                    " values; it takes an m x m matrix (m GPUs)"};
    for (double b : d.gpu_bandwidth)
      if (!std::isfinite(b) || b <= 0)
        return Error{MPI_ERR_ARG, "dtmpi::stencil: set_gpu_bandwidth(): every bandwidth must be finite and > 0"};
    if (d.memory == Memory::kHost)
      return Error{MPI_ERR_ARG, "dtmpi::stencil: set_gpu_bandwidth() on a host-memory domain (it weighs the links "
                                "between GPUs; use set_memory(Memory::kDevice))"};
  }
  for (int a = 0; a < 3; ++a)
    if (d.radius.low(a) < 0 || d.radius.high(a) < 0)
      return Error{MPI_ERR_ARG, std::string("dtmpi::stencil: negative radius along ") + kAxis[a]};
  for (const QuantityInfo& q : d.quantities)
    if (q.radius)
      for (int a = 0; a < 3; ++a)
        if (q.radius->low(a) < 0 || q.radius->high(a) < 0 || q.radius->low(a) > d.radius.low(a) ||
            q.radius->high(a) > d.radius.high(a))
          return Error{MPI_ERR_ARG, "dtmpi::stencil: quantity '" + q.name + "' has radius " +
                                        std::to_string(q.radius->low(a)) + "/" + std::to_string(q.radius->high(a)) +
                                        " along " + kAxis[a] + ", outside 0.." + std::to_string(d.radius.low(a)) + "/" +
                                        std::to_string(d.radius.high(a)) + " (the domain's radius there)"};
  return ok_status();
}

Status radius_fits(const DomainImpl& d) {
  static const char* kAxis = "xyz";
  const Partition& p = *d.partition;
  for (int a = 0; a < 3; ++a) {
    const int r = std::max(d.radius.low(a), d.radius.high(a));
    if (r > p.min_extent(a))
      return Error{MPI_ERR_ARG, "dtmpi::stencil: radius " + std::to_string(r) + " along " + kAxis[a] +
                                    " is larger than the smallest subdomain there (" + std::to_string(p.min_extent(a)) +
                                    " points: extent " + std::to_string(d.extent[a]) + " in " +
                                    std::to_string(p.grid()[a]) + " subdomains); use a larger extent, fewer ranks or a smaller radius"};
  }
  return ok_status();
}

// The nodes (MPI_COMM_TYPE_SHARED, or DTMPI_RANKS_PER_NODE consecutive ranks)
// and the ranks of each, in rank order; every node must have as many.
Status node_ranks(const DomainImpl& d, std::vector<std::vector<int>>& nodes) {
  std::vector<int> node_of;
  DTMPI_TRY(topology::node_of_ranks(d.user_comm, static_cast<int>(runtime::config().ranks_per_node), node_of));
  std::map<int, std::vector<int>> by_leader;
  for (int r = 0; r < d.size; ++r) by_leader[node_of[static_cast<size_t>(r)]].push_back(r);
  for (auto& [leader, ranks] : by_leader) nodes.push_back(ranks);
  for (const auto& n : nodes)
    if (n.size() != nodes.front().size())
      return Error{MPI_ERR_ARG, "dtmpi::stencil: the nodes have different numbers of ranks (" +
                                    std::to_string(nodes.front().size()) + " and " + std::to_string(n.size()) +
                                    "); the partition needs the same number on every node"};
  return ok_status();
}

}  // namespace

DomainImpl::~DomainImpl() {
  // an exchange left in flight (an exception between start and finish, or
  // inside start): its receives are cancelled and its sends completed before
  // the buffers they use are released
  if (in_flight) settle_requests(*this);
  if (realized) release_storage(*this);
  if (comm != MPI_COMM_NULL) REAL(MPI_Comm_free)(&comm);
}

Box Subdomain::allocated() const {
  Box b = box_;
  for (int a = 0; a < 3; ++a) {
    b.lo[a] -= radius_.low(a);
    b.hi[a] += radius_.high(a);
  }
  return b;
}

Box Subdomain::interior() const {
  Box b = box_;
  for (int a = 0; a < 3; ++a) {
    b.lo[a] += radius_.low(a);  // a point reads low(a) points below it and high(a) above
    b.hi[a] -= radius_.high(a);
    if (b.hi[a] < b.lo[a]) b.hi[a] = b.lo[a];
  }
  return b;
}

std::vector<Box> Subdomain::exterior() const {
  // box() minus interior(): slabs along z, then y, then x of what remains
  std::vector<Box> out;
  const Box in = interior();
  Box rest = box_;
  for (int a = 2; a >= 0; --a) {
    Box below = rest, above = rest;
    below.hi[a] = std::max(in.lo[a], rest.lo[a]);
    above.lo[a] = std::min(std::max(in.hi[a], below.hi[a]), rest.hi[a]);
    if (!below.empty()) out.push_back(below);
    if (!above.empty()) out.push_back(above);
    rest.lo[a] = below.hi[a];
    rest.hi[a] = above.lo[a];
  }
  return out;
}

DistributedDomain::DistributedDomain(MPI_Comm comm, Dim3 extent) : impl_(std::make_unique<DomainImpl>()) {
  impl_->user_comm = comm;
  impl_->extent = extent;
}

DistributedDomain::~DistributedDomain() = default;

namespace {
void before_realize(const DomainImpl& d, const char* what) {
  if (d.realized) throw StencilError(std::string("dtmpi::stencil: ") + what + " after realize()");
}
void after_realize(const DomainImpl& d, const char* what) {
  if (!d.realized) throw StencilError(std::string("dtmpi::stencil: ") + what + " before realize()");
}
}  // namespace

DistributedDomain& DistributedDomain::set_radius(int r) { return set_radius(Radius::uniform(r)); }
DistributedDomain& DistributedDomain::set_radius(const Radius& r) {
  before_realize(*impl_, "set_radius()");
  impl_->radius = r;  // validated by realize(), collectively
  return *this;
}
DistributedDomain& DistributedDomain::set_periodic(bool x, bool y, bool z) {
  before_realize(*impl_, "set_periodic()");
  impl_->periodic = {x, y, z};
  return *this;
}
DistributedDomain& DistributedDomain::set_memory(Memory m) {
  before_realize(*impl_, "set_memory()");
  impl_->memory = m;
  return *this;
}
DistributedDomain& DistributedDomain::set_peer_path(PeerPath p) {
  before_realize(*impl_, "set_peer_path()");
  impl_->peer_path = p;  // validated by realize()
  return *this;
}
DistributedDomain& DistributedDomain::set_host_shared_memory(bool on) {
  before_realize(*impl_, "set_host_shared_memory()");
  impl_->shm_set = on;
  return *this;
}
DistributedDomain& DistributedDomain::set_subdomains_per_rank(int n) {
  before_realize(*impl_, "set_subdomains_per_rank()");
  impl_->per_rank = n;
  return *this;
}
DistributedDomain& DistributedDomain::set_placement(bool optimize) {
  before_realize(*impl_, "set_placement()");
  impl_->optimize_placement = optimize;
  return *this;
}
DistributedDomain& DistributedDomain::set_gpu_bandwidth(std::vector<double> gbps) {
  before_realize(*impl_, "set_gpu_bandwidth()");
  impl_->gpu_bandwidth = std::move(gbps);  // validated by realize()
  return *this;
}
DistributedDomain& DistributedDomain::set_gpus(std::vector<int> devices) {
  before_realize(*impl_, "set_gpus()");
  impl_->gpus_set = std::move(devices);  // validated by realize(), on every rank together
  return *this;
}
DistributedDomain& DistributedDomain::set_cuda_graphs(bool on) {
  before_realize(*impl_, "set_cuda_graphs()");
  impl_->graphs_set = on;
  return *this;
}
DistributedDomain& DistributedDomain::set_overlap_blocks_per_sm(int blocks) {
  before_realize(*impl_, "set_overlap_blocks_per_sm()");
  impl_->overlap_blocks_set = blocks;  // validated by realize()
  return *this;
}
bool DistributedDomain::cuda_graphs() const {
  after_realize(*impl_, "cuda_graphs()");
  return impl_->graphs;
}
int DistributedDomain::add_quantity_bytes(const std::string& name, size_t size, size_t align, const Radius* radius) {
  before_realize(*impl_, "add_quantity()");
  impl_->quantities.push_back({name, size, align, {}});
  if (radius) impl_->quantities.back().radius = *radius;  // validated by realize()
  return static_cast<int>(impl_->quantities.size() - 1);
}

void DistributedDomain::realize() {
  DomainImpl& d = *impl_;
  before_realize(d, "realize()");
  // a realize() that failed before may have left a partial partition behind
  d.partition.reset();
  d.owner.clear();
  d.subs.clear();
  d.copies.clear();
  d.peers.clear();
  d.channels.reset();
  d.device_messages = false;
  REAL(MPI_Comm_rank)(d.user_comm, &d.rank);
  REAL(MPI_Comm_size)(d.user_comm, &d.size);
  check(same_everywhere(d));
  check(valid(d));
  std::vector<std::vector<int>> nodes;
  check(node_ranks(d, nodes));
  const int ranks_per_node = static_cast<int>(nodes.front().size());
  d.node_of_rank.assign(static_cast<size_t>(d.size), 0);
  for (size_t k = 0; k < nodes.size(); ++k)
    for (int r : nodes[k]) d.node_of_rank[static_cast<size_t>(r)] = static_cast<int>(k);
  auto part = Partition::make(d.extent, static_cast<int>(nodes.size()), ranks_per_node * d.per_rank);
  check(part);
  d.partition = part.value();
  check(radius_fits(d));
  const Partition& p = *d.partition;
  check(assign_owners(d, nodes));
  for (int id = 0; id < p.count(); ++id) {
    if (d.owner[static_cast<size_t>(id)] == d.rank) {
      const Dim3 g = p.index_of(id);
      d.subs.push_back(Access::make(id, g, p.box(g), d.radius));
    }
  }
  // the plan and the allocation can fail on one rank only: agree before
  // anyone goes on, and name the first rank that failed everywhere
  Status local = build_plan(d);
  if (local) local = allocate_storage(d);
  d.realized = true;  // from here the destructor releases what was allocated
  int bad = local ? d.size : d.rank, first_bad = 0;
  check(DTMPI_MPI_STATUS(REAL(MPI_Allreduce)(&bad, &first_bad, 1, MPI_INT, MPI_MIN, d.user_comm)));
  if (first_bad < d.size) {
    release_storage(d);
    d.realized = false;
    throw StencilError(local ? "dtmpi::stencil: realize() failed on rank " + std::to_string(first_bad) +
                                   " (its message says why)"
                               : named(local.error().what) + " (rank " + std::to_string(d.rank) + ")");
  }
  // every rank got here (the allreduce above): the shared-memory decision is
  // collective; only a failed MPI call ends it early, and leaves nothing behind
  if (Status shm = connect_node_peers(d); !shm) {
    release_storage(d);
    d.channels.reset();
    d.realized = false;
    fail(shm.error());
  }
  check(DTMPI_MPI_STATUS(REAL(MPI_Comm_dup)(d.user_comm, &d.comm)));
  REAL(MPI_Comm_set_errhandler)(d.comm, MPI_ERRORS_RETURN);
}

bool DistributedDomain::realized() const { return impl_->realized; }
std::vector<Subdomain>& DistributedDomain::subdomains() {
  after_realize(*impl_, "subdomains()");
  return impl_->subs;
}
Dim3 DistributedDomain::extent() const { return impl_->extent; }
Dim3 DistributedDomain::node_grid() const {
  after_realize(*impl_, "node_grid()");
  return impl_->partition->node_grid();
}
Dim3 DistributedDomain::local_grid() const {
  after_realize(*impl_, "local_grid()");
  return impl_->partition->local_grid();
}
Dim3 DistributedDomain::grid() const {
  after_realize(*impl_, "grid()");
  return impl_->partition->grid();
}
int DistributedDomain::nodes() const {
  after_realize(*impl_, "nodes()");
  return impl_->partition->nodes();
}
Box DistributedDomain::box_of(Dim3 g) const {
  after_realize(*impl_, "box_of()");
  return impl_->partition->box(g);
}
int DistributedDomain::owner_of(Dim3 g) const {
  after_realize(*impl_, "owner_of()");
  return impl_->owner.at(static_cast<size_t>(impl_->partition->id_of(g)));
}
ExchangeStats DistributedDomain::stats() const {
  after_realize(*impl_, "stats()");
  ExchangeStats s;
  s.peers = static_cast<int>(impl_->peers.size());
  for (const Peer& p : impl_->peers) {
    s.by_peer.push_back({p.rank, p.send_bytes, p.recv_bytes, p.same_node, p.shared});
    if (p.shared) {
      s.shm_bytes += p.send_bytes;
    } else {
      s.messages += p.send.empty() ? 0 : 1;
      s.mpi_bytes += p.send_bytes;
    }
  }
  s.received_shm = impl_->received_shm;
  s.received_mpi = impl_->received_mpi;
  s.peer_path = impl_->memory == Memory::kHost ? PeerPath::kHost
                : impl_->device_messages         ? PeerPath::kDevice
                                                 : PeerPath::kStaged;
  s.local_copies = static_cast<int64_t>(impl_->copies.size());
  for (const LocalCopy& c : impl_->copies) s.local_bytes += impl_->region_bytes(c.from);
  s.overlap_blocks_per_sm = impl_->overlap_blocks_per_sm;
  s.overlapped_exchanges = impl_->overlapped_exchanges;
  s.deferred_sends = impl_->deferred_sends;
  s.gpu_peer_copies = impl_->peer_copies;
  return s;
}

std::string DistributedDomain::describe() const {
  after_realize(*impl_, "describe()");
  const DomainImpl& d = *impl_;
  const Partition& p = *d.partition;
  return "extent " + text(d.extent) + " in " + text(p.grid()) + " subdomains (" + std::to_string(p.nodes()) +
         " node(s) of " + text(p.local_grid()) + ", " + std::to_string(d.per_rank) + " per rank), " +
         d.placement_text + ", messages " + to_string(stats().peer_path) +
         (d.peer_copies ? ", copies between the rank's GPUs" : "") +
         (d.channels ? ", shared memory with the node's peers" : "");
}

void DistributedDomain::swap() {
  after_realize(*impl_, "swap()");
  if (impl_->in_flight) throw StencilError("dtmpi::stencil: swap() while an exchange is in flight");
  for (Subdomain& s : impl_->subs) std::swap(Access::current(s), Access::next(s));
  impl_->parity ^= 1;  // the other set of recorded graphs holds the swapped pointers
}

}  // namespace dtmpi::stencil
