// Host-memory domains under mpiexec (1-4 ranks): every ghost point after
// exchange() by global coordinate, for several radii (uniform, per side,
// zero on some sides), periodic / open / mixed boundaries, 1-3 subdomains
// per rank, element types of 1, 3, 4, 8 and 16 bytes; swap(); the overlap
// pattern (interior computed between start_exchange() and finish_exchange())
// against a single-process computation; what the plan sends.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "stencil/stencil_check.hpp"

namespace st = dtmpi::stencil;
using stencil_check::Odd3;
using stencil_check::Wide16;

namespace {

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

const stencil_check::Upload kUpload = [](const st::Subdomain& s, int q, const std::vector<unsigned char>& img) {
  std::memcpy(s.current_data(q), img.data(), img.size());
};
const stencil_check::Download kDownload = [](const st::Subdomain& s, int q, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(s.current_data(q));
  return std::vector<unsigned char>(p, p + bytes);
};

struct Case {
  const char* name;
  st::Dim3 extent;
  st::Radius radius;
  std::array<bool, 3> periodic;
  int per_rank;
};

std::vector<Case> cases() {
  return {
      {"radius1_periodic", {12, 10, 9}, st::Radius::uniform(1), {true, true, true}, 1},
      {"radius2_open", {13, 11, 10}, st::Radius::uniform(2), {false, false, false}, 1},
      {"radius3_mixed_2_per_rank", {19, 14, 12}, st::Radius::uniform(3), {true, false, true}, 2},
      {"per_side_radius_3_per_rank", {17, 15, 13}, st::Radius{}.set(0, 2, 1).set(1, 0, 1).set(2, 1, 0), {true, true, false}, 3},
      {"flat_z_periodic", {16, 12, 1}, st::Radius{}.set(0, 1, 1).set(1, 1, 1).set(2, 0, 0), {true, true, true}, 1},
  };
}

}  // namespace

class StencilExchange : public ::testing::TestWithParam<int> {};

TEST_P(StencilExchange, EveryGhostByGlobalCoordinate) {
  const Case c = cases()[static_cast<size_t>(GetParam())];
  SCOPED_TRACE(c.name);
  st::DistributedDomain d(MPI_COMM_WORLD, c.extent);
  d.set_radius(c.radius).set_periodic(c.periodic[0], c.periodic[1], c.periodic[2]).set_subdomains_per_rank(c.per_rank);
  d.add_quantity<double>("density");
  d.add_quantity<int32_t>("flag");
  d.add_quantity<Odd3>("odd");
  d.add_quantity<Wide16>("wide");
  d.add_quantity<unsigned char>("byte");
  const std::vector<size_t> esize = {8, 4, 3, 16, 1};
  d.realize();
  ASSERT_EQ(static_cast<int>(d.subdomains().size()), c.per_rank);
  ASSERT_EQ(d.grid().volume(), world_size() * c.per_rank);
  stencil_check::fill(d, esize, 0, kUpload);
  d.exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 0, c.periodic, kDownload), 0);
  // next generation written into next(), swapped in, exchanged again
  d.swap();
  stencil_check::fill(d, esize, 1, kUpload);
  d.exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 1, c.periodic, kDownload), 0);
  d.swap();  // back to generation 0's buffers: untouched by the second exchange
  EXPECT_EQ(stencil_check::verify(d, esize, 0, c.periodic, kDownload), 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, StencilExchange, ::testing::Range(0, 5));

// Quantities that reach less far than the domain's radius exchange only
// their own radius (the rest of their ghost shell is never written), and
// send fewer bytes.
TEST(StencilQuantityRadius, OnlyItsOwnRadiusTravels) {
  const std::array<bool, 3> periodic{true, false, true};
  const st::Radius full = st::Radius::uniform(3);
  const std::vector<st::Radius> reach = {full, st::Radius::uniform(1), st::Radius{}.set(0, 2, 0).set(1, 0, 3).set(2, 1, 1),
                                         st::Radius{}};
  auto build = [&](bool own) {
    auto d = std::make_unique<st::DistributedDomain>(MPI_COMM_WORLD, st::Dim3{21, 17, 15});
    d->set_radius(full).set_periodic(periodic[0], periodic[1], periodic[2]).set_subdomains_per_rank(2);
    d->add_quantity<double>("full");
    for (size_t q = 1; q < reach.size(); ++q) {
      if (own) d->add_quantity<float>("q" + std::to_string(q), reach[q]);
      else d->add_quantity<float>("q" + std::to_string(q));
    }
    d->realize();
    return d;
  };
  auto d = build(true);
  const std::vector<size_t> esize = {8, 4, 4, 4};
  stencil_check::fill(*d, esize, 0, kUpload);
  d->exchange();
  EXPECT_EQ(stencil_check::verify(*d, esize, 0, periodic, kDownload, reach), 0);
  auto all = build(false);  // the same quantities at the domain's radius move more bytes
  const st::ExchangeStats a = d->stats(), b = all->stats();
  EXPECT_LT(a.mpi_bytes + a.shm_bytes + a.local_bytes, b.mpi_bytes + b.shm_bytes + b.local_bytes);
}

// interior() and exterior() split box() into disjoint pieces.
TEST(StencilRegions, InteriorAndExteriorTileTheBox) {
  st::DistributedDomain d(MPI_COMM_WORLD, {20, 18, 16});
  d.set_radius(st::Radius{}.set(0, 1, 2).set(1, 3, 0).set(2, 1, 1)).set_subdomains_per_rank(2);
  d.add_quantity<float>("u");
  d.realize();
  for (const st::Subdomain& s : d.subdomains()) {
    const st::Box b = s.box();
    std::vector<int> count(static_cast<size_t>(b.volume()), 0);
    auto mark = [&](const st::Box& r) {
      for (int64_t z = r.lo.z; z < r.hi.z; ++z)
        for (int64_t y = r.lo.y; y < r.hi.y; ++y)
          for (int64_t x = r.lo.x; x < r.hi.x; ++x) {
            ASSERT_TRUE(b.contains({x, y, z}));
            ++count[static_cast<size_t>((x - b.lo.x) + b.size().x * ((y - b.lo.y) + b.size().y * (z - b.lo.z)))];
          }
    };
    const st::Box in = s.interior();
    mark(in);
    for (const st::Box& e : s.exterior()) mark(e);
    for (int c : count) ASSERT_EQ(c, 1);
    // the interior reads no ghost: its reach stays inside box()
    if (!in.empty()) {
      EXPECT_EQ(in.lo.x - 1, b.lo.x);
      EXPECT_EQ(in.hi.x + 2, b.hi.x);
      EXPECT_EQ(in.lo.y - 3, b.lo.y);
      EXPECT_EQ(in.hi.y, b.hi.y);
    }
  }
}

// What the plan moves: one message or one shared-memory buffer per peer rank
// (all directions and quantities batched); a single rank's periodic
// subdomains copy directly.
TEST(StencilPlan, OneMessagePerPeerAndLocalCopies) {
  const int n = world_size();
  st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
  d.set_radius(1).set_subdomains_per_rank(2);
  d.add_quantity<double>("a");
  d.add_quantity<float>("b");
  d.realize();
  const st::ExchangeStats s = d.stats();
  EXPECT_EQ(s.peer_path, st::PeerPath::kHost);  // host memory: no staged / device choice
  int shared = 0;
  for (const st::PeerTraffic& p : s.by_peer) shared += p.shared_memory;
  EXPECT_EQ(s.messages + shared, s.peers);
  EXPECT_LE(s.peers, n - 1);
  if (n == 1) {
    // 2 subdomains, 26 directions each, all on this rank
    EXPECT_EQ(s.peers, 0);
    EXPECT_EQ(s.local_copies, 2 * 26);
    EXPECT_EQ(s.mpi_bytes + s.shm_bytes, 0);
  } else {
    EXPECT_GE(s.peers, 1);
    EXPECT_LT(s.local_copies, 2 * 26);
    EXPECT_GT(s.mpi_bytes + s.shm_bytes, 0);
  }
  // every ghost point of both subdomains is filled, by copy or by message:
  // 12 bytes per point over the whole shell
  int64_t ghost_points = 0;
  for (const st::Subdomain& sd : d.subdomains()) ghost_points += sd.allocated().volume() - sd.box().volume();
  int64_t recv_total = 0, sent = s.mpi_bytes + s.shm_bytes + s.local_bytes, sent_total = 0;
  MPI_Allreduce(&sent, &sent_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&ghost_points, &recv_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(sent_total, recv_total * 12);
  // per peer: what this rank sends to r is what r expects from it
  ASSERT_EQ(static_cast<int>(s.by_peer.size()), s.peers);
  int64_t sum = 0;
  std::vector<MPI_Request> req;
  std::vector<int64_t> theirs(s.by_peer.size());
  for (size_t i = 0; i < s.by_peer.size(); ++i) {
    sum += s.by_peer[i].send_bytes;
    req.emplace_back();
    MPI_Irecv(&theirs[i], 1, MPI_INT64_T, s.by_peer[i].rank, 3, MPI_COMM_WORLD, &req.back());
    req.emplace_back();
    MPI_Isend(&s.by_peer[i].send_bytes, 1, MPI_INT64_T, s.by_peer[i].rank, 3, MPI_COMM_WORLD, &req.back());
  }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  EXPECT_EQ(sum, s.mpi_bytes + s.shm_bytes);
  for (size_t i = 0; i < s.by_peer.size(); ++i) EXPECT_EQ(theirs[i], s.by_peer[i].recv_bytes) << "peer " << s.by_peer[i].rank;
  // issue order: other nodes first, each group largest first; a node is
  // DTMPI_RANKS_PER_NODE consecutive ranks where set (this machine is one node)
  const char* rpn = std::getenv("DTMPI_RANKS_PER_NODE");
  const int per_node = rpn && std::atoi(rpn) > 0 ? std::atoi(rpn) : n;
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  for (const st::PeerTraffic& p : s.by_peer) EXPECT_EQ(p.same_node, p.rank / per_node == me / per_node) << p.rank;
  for (size_t i = 1; i < s.by_peer.size(); ++i) {
    const st::PeerTraffic &a = s.by_peer[i - 1], &b = s.by_peer[i];
    if (a.same_node == b.same_node) EXPECT_GE(a.send_bytes, b.send_bytes);
    else EXPECT_FALSE(a.same_node) << "a peer of this node issued before one of another node";
  }
}

// The overlap pattern of a real solver: start the exchange, compute the
// interior of next() from current(), finish, compute the exterior, swap;
// the result equals the same iterations computed on one process.
TEST(StencilOverlap, InteriorDuringExchangeMatchesSingleProcess) {
  const st::Dim3 e{18, 14, 11};
  const int r = 2, steps = 4;
  const std::array<bool, 3> periodic{true, false, true};
  auto wrap = [&](st::Dim3 p, bool& outside) {
    outside = false;
    for (int a = 0; a < 3; ++a)
      if (p[a] < 0 || p[a] >= e[a]) {
        if (periodic[static_cast<size_t>(a)]) p[a] = (p[a] + e[a]) % e[a];
        else outside = true;
      }
    return p;
  };
  auto initial = [](const st::Dim3& p) { return std::sin(0.3 * p.x) + 0.1 * p.y * p.y - 0.05 * p.z * p.x; };
  // the stencil: all points within radius 2 along each axis (a star), fixed weights
  auto apply = [&](auto&& at, const st::Dim3& p) {
    double s = 0.4 * at(p);
    for (int a = 0; a < 3; ++a)
      for (int k = 1; k <= r; ++k) {
        st::Dim3 lo = p, hi = p;
        lo[a] -= k;
        hi[a] += k;
        s += (k == 1 ? 0.07 : 0.03) * (at(lo) + at(hi));
      }
    return s;
  };
  // single process, ghosts past the open boundary are 0
  std::vector<double> ref(static_cast<size_t>(e.volume())), tmp(ref.size());
  auto idx = [&](const st::Dim3& p) { return static_cast<size_t>(p.x + e.x * (p.y + e.y * p.z)); };
  for (int64_t z = 0; z < e.z; ++z)
    for (int64_t y = 0; y < e.y; ++y)
      for (int64_t x = 0; x < e.x; ++x) ref[idx({x, y, z})] = initial({x, y, z});
  for (int t = 0; t < steps; ++t) {
    auto at = [&](const st::Dim3& p) {
      bool out = false;
      const st::Dim3 w = wrap(p, out);
      return out ? 0.0 : ref[idx(w)];
    };
    for (int64_t z = 0; z < e.z; ++z)
      for (int64_t y = 0; y < e.y; ++y)
        for (int64_t x = 0; x < e.x; ++x) tmp[idx({x, y, z})] = apply(at, {x, y, z});
    ref.swap(tmp);
  }

  st::DistributedDomain d(MPI_COMM_WORLD, e);
  d.set_radius(r).set_periodic(periodic[0], periodic[1], periodic[2]).set_subdomains_per_rank(2);
  auto u = d.add_quantity<double>("u");
  d.realize();
  for (st::Subdomain& s : d.subdomains()) {
    auto c = s.current(u);
    const st::Box b = s.box();
    for (int64_t z = b.lo.z; z < b.hi.z; ++z)
      for (int64_t y = b.lo.y; y < b.hi.y; ++y)
        for (int64_t x = b.lo.x; x < b.hi.x; ++x) c(x, y, z) = initial({x, y, z});
  }
  auto compute = [&](const st::Subdomain& s, const st::Box& region) {
    auto c = s.current(u);
    auto nx = s.next(u);
    auto at = [&](const st::Dim3& p) { return c(p.x, p.y, p.z); };
    for (int64_t z = region.lo.z; z < region.hi.z; ++z)
      for (int64_t y = region.lo.y; y < region.hi.y; ++y)
        for (int64_t x = region.lo.x; x < region.hi.x; ++x) nx(x, y, z) = apply(at, {x, y, z});
  };
  for (int t = 0; t < steps; ++t) {
    d.start_exchange();
    for (const st::Subdomain& s : d.subdomains()) {
      compute(s, s.interior());
      d.progress();  // the messages move on between the subdomains' interiors
    }
    d.finish_exchange();
    for (const st::Subdomain& s : d.subdomains())
      for (const st::Box& b : s.exterior()) compute(s, b);
    d.swap();
  }
  int64_t wrong = 0;
  for (const st::Subdomain& s : d.subdomains()) {
    auto c = s.current(u);
    const st::Box b = s.box();
    for (int64_t z = b.lo.z; z < b.hi.z; ++z)
      for (int64_t y = b.lo.y; y < b.hi.y; ++y)
        for (int64_t x = b.lo.x; x < b.hi.x; ++x)
          if (c(x, y, z) != ref[idx({x, y, z})] && ++wrong <= 5)
            ADD_FAILURE() << "(" << x << "," << y << "," << z << "): " << c(x, y, z) << " vs " << ref[idx({x, y, z})];
  }
  EXPECT_EQ(wrong, 0);
}

// Placement inside a node (docs/stencil.md, "Placement"), on 3 ranks of one
// node, 2 subdomains each, a 12^3 open grid: the node's local grid is 3x2x1
// of 4x6x12 subdomains. The partition's order pairs (0,0)+(1,0), (2,0)+(0,1)
// (not neighbours) and (1,1)+(2,1): 2 x-faces of 6x12 points stay on their
// rank. The best pairing keeps 2 x-faces and one y-face (4x12) on their
// ranks: 72 + 48 + 72 points each way. The ghosts are filled either way.
TEST(StencilPlacement, PairsNeighboursOnTheSameRank) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  if (world_size() != 3 || node_size != 3 || std::getenv("DTMPI_RANKS_PER_NODE"))
    GTEST_SKIP() << "needs 3 ranks on one node";
  auto local_bytes = [](bool optimize, std::string* text) {
    st::DistributedDomain d(MPI_COMM_WORLD, {12, 12, 12});
    d.set_radius(1).set_periodic(false, false, false).set_subdomains_per_rank(2).set_placement(optimize);
    d.add_quantity<double>("u");
    d.realize();
    EXPECT_EQ(d.local_grid(), (st::Dim3{3, 2, 1}));
    if (text) *text = d.describe();
    stencil_check::fill(d, {8}, 0, kUpload);
    d.exchange();
    EXPECT_EQ(stencil_check::verify(d, {8}, 0, {false, false, false}, kDownload), 0);
    int64_t mine = d.stats().local_bytes, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
  };
  std::string text;
  EXPECT_EQ(local_bytes(false, nullptr), 2 * (72 + 72) * 8);
  EXPECT_EQ(local_bytes(true, &text), 2 * (72 + 48 + 72) * 8);
  EXPECT_NE(text.find("exhaustive"), std::string::npos) << text;
}
