// Host-memory domains by both ways to the node's peers (docs/stencil.md,
// "Shared memory"): shared memory (set_host_shared_memory(true)), forced
// messages (false), and the default DTMPI_STENCIL_SHM decides (the same
// binary runs with it 0 and unset). Every case checks which path ran -- per
// peer by stats().by_peer, and by the counters of buffers unpacked from each
// -- and every ghost by global coordinate over several exchanges in a row,
// the ranks skewed by sleeps so that a sender reusing a buffer its receiver
// has not read yet would show as a wrong generation. Under
// DTMPI_RANKS_PER_NODE=2 on 4 ranks the peers of the other emulated node
// must get messages, those of the own node shared memory.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stencil/stencil_check.hpp"

namespace st = dtmpi::stencil;
using stencil_check::Odd3;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

const stencil_check::Upload kUpload = [](const st::Subdomain& s, int q, const std::vector<unsigned char>& img) {
  std::memcpy(s.current_data(q), img.data(), img.size());
};
const stencil_check::Download kDownload = [](const st::Subdomain& s, int q, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(s.current_data(q));
  return std::vector<unsigned char>(p, p + bytes);
};

enum class Mode { kShared, kMessages, kEnvironment };
const char* name(Mode m) { return m == Mode::kShared ? "shared" : m == Mode::kMessages ? "messages" : "environment"; }
// Whether the node's peers must use shared memory in this mode.
// DTMPI_TEST_SHM_FAIL_RANK: one rank's segment fails, so no rank may use
// shared memory (the collective fallback), whatever the mode asks.
bool wants_shared(Mode m) {
  if (std::getenv("DTMPI_TEST_SHM_FAIL_RANK")) return false;
  if (m != Mode::kEnvironment) return m == Mode::kShared;
  const char* v = std::getenv("DTMPI_STENCIL_SHM");
  return !(v && (std::string(v) == "0" || std::string(v) == "off"));
}

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
      // data flows towards +x only, along a chain of ranks: a sender never
      // waits for data of its receiver, so only the buffer handshake keeps
      // it from running ahead and overwriting what is not read yet
      {"one_way_chain", {32, 6, 5}, st::Radius{}.set(0, 2, 0), {false, false, false}, 1},
  };
}

// The path of every peer as the mode and the nodes say; returns the number
// of peers (shared, by message) this rank receives bytes from.
std::pair<int64_t, int64_t> check_paths(const st::DistributedDomain& d, Mode m) {
  const st::ExchangeStats s = d.stats();
  int64_t shared = 0, messages = 0;
  for (const st::PeerTraffic& p : s.by_peer) {
    EXPECT_EQ(p.shared_memory, wants_shared(m) && p.same_node) << "peer " << p.rank << " same node " << p.same_node;
    if (p.recv_bytes > 0) ++(p.shared_memory ? shared : messages);
  }
  EXPECT_EQ(s.peer_path, st::PeerPath::kHost);
  return {shared, messages};
}

}  // namespace

class StencilShm : public ::testing::TestWithParam<std::tuple<int, Mode>> {};

// Several generations exchanged in a row; in each, one rank (a different one
// every time) dawdles between start_exchange() and finish_exchange(), so its
// peers finish, refill and start the next exchange while it has not read
// the previous one yet; in the one-way chain every receiver dawdles.
TEST_P(StencilShm, RepeatedSkewedExchangesFillEveryGhost) {
  const Case c = cases()[static_cast<size_t>(std::get<0>(GetParam()))];
  const Mode mode = std::get<1>(GetParam());
  SCOPED_TRACE(std::string(c.name) + ", " + name(mode));
  st::DistributedDomain d(MPI_COMM_WORLD, c.extent);
  d.set_radius(c.radius).set_periodic(c.periodic[0], c.periodic[1], c.periodic[2]).set_subdomains_per_rank(c.per_rank);
  if (mode != Mode::kEnvironment) d.set_host_shared_memory(mode == Mode::kShared);
  d.add_quantity<double>("u");
  d.add_quantity<Odd3>("odd");
  d.add_quantity<int32_t>("v");
  const std::vector<size_t> esize = {8, 3, 4};
  d.realize();
  const auto [shared, messages] = check_paths(d, mode);
  const st::ExchangeStats s = d.stats();
  if (wants_shared(mode) && world_size() > 1 && !std::getenv("DTMPI_RANKS_PER_NODE")) {
    EXPECT_GT(s.shm_bytes + shared, 0) << "ranks of one node and no byte through shared memory";
  }
  if (!wants_shared(mode)) {
    EXPECT_EQ(s.shm_bytes, 0);
  }
  const bool chain = c.radius.high(0) == 0;
  const int me = world_rank(), n = world_size(), rounds = 5;
  for (int g = 0; g < rounds; ++g) {
    stencil_check::fill(d, esize, g, kUpload);
    if (me == (g + 1) % n) sleep_ms(15);  // late to start
    d.start_exchange();
    if (me == g % n || (chain && me > 0)) sleep_ms(25);  // slow to read
    d.finish_exchange();
    EXPECT_EQ(stencil_check::verify(d, esize, g, c.periodic, kDownload), 0) << "generation " << g;
  }
  const st::ExchangeStats after = d.stats();
  EXPECT_EQ(after.received_shm, rounds * shared);
  EXPECT_EQ(after.received_mpi, rounds * messages);
}

INSTANTIATE_TEST_SUITE_P(Paths, StencilShm,
                         ::testing::Combine(::testing::Range(0, 4),
                                            ::testing::Values(Mode::kShared, Mode::kMessages, Mode::kEnvironment)),
                         [](const auto& info) {
                           return std::string(cases()[static_cast<size_t>(std::get<0>(info.param))].name) + "_" +
                                  name(std::get<1>(info.param));
                         });

class StencilShmOverlap : public ::testing::TestWithParam<Mode> {};

// start_exchange(), interior compute with progress() between planes, a
// progress() loop until everything has arrived, finish_exchange(). While
// rank 0 has not started, its receivers' progress() must say "not yet" and
// return at once (it only tests; a wait there would take rank 0's sleep).
TEST_P(StencilShmOverlap, ProgressLoopThenFinish) {
  const Mode mode = GetParam();
  SCOPED_TRACE(name(mode));
  const std::array<bool, 3> periodic{true, true, false};
  st::DistributedDomain d(MPI_COMM_WORLD, {16, 14, 12});
  d.set_radius(2).set_periodic(periodic[0], periodic[1], periodic[2]);
  if (mode != Mode::kEnvironment) d.set_host_shared_memory(mode == Mode::kShared);
  auto u = d.add_quantity<double>("u");
  d.add_quantity<float>("w");
  const std::vector<size_t> esize = {8, 4};
  d.realize();
  check_paths(d, mode);
  bool from_rank0 = false;  // this rank receives bytes from rank 0
  for (const st::PeerTraffic& p : d.stats().by_peer) from_rank0 |= p.rank == 0 && p.recv_bytes > 0;
  const int me = world_rank();
  for (int g = 0; g < 3; ++g) {
    stencil_check::fill(d, esize, g, kUpload);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) sleep_ms(300);
    d.start_exchange();
    if (from_rank0) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_FALSE(d.progress()) << "rank 0 has not started yet";
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150)) << "progress() waited";
    }
    // the interior of next(): the sum of u over the radius-2 star
    for (const st::Subdomain& s : d.subdomains()) {
      auto in = s.current(u);
      auto out = s.next(u);
      const st::Box b = s.interior();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z) {
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x)
            out(x, y, z) = in(x - 2, y, z) + in(x - 1, y, z) + in(x, y, z) + in(x + 1, y, z) + in(x + 2, y, z) +
                           in(x, y - 1, z) + in(x, y + 1, z) + in(x, y, z - 1) + in(x, y, z + 1);
        d.progress();
      }
    }
    int polls = 0;
    while (!d.progress()) ++polls;
    d.finish_exchange();
    EXPECT_EQ(stencil_check::verify(d, esize, g, periodic, kDownload), 0) << "generation " << g << ", " << polls << " polls";
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, StencilShmOverlap, ::testing::Values(Mode::kShared, Mode::kMessages, Mode::kEnvironment),
                         [](const auto& info) { return std::string(name(info.param)); });

// Two emulated nodes of 2 ranks (DTMPI_RANKS_PER_NODE=2, 4 ranks): both
// paths really run side by side on every rank.
TEST(StencilShmNodes, OtherNodeMessagesOwnNodeSharedMemory) {
  const char* rpn = std::getenv("DTMPI_RANKS_PER_NODE");
  if (world_size() != 4 || !rpn || std::atoi(rpn) != 2) GTEST_SKIP() << "needs 4 ranks as 2 emulated nodes of 2";
  st::DistributedDomain d(MPI_COMM_WORLD, {12, 12, 12});
  d.set_radius(1).set_host_shared_memory(true);
  d.add_quantity<double>("u");
  d.realize();
  ASSERT_EQ(d.nodes(), 2);
  const auto [shared, messages] = check_paths(d, Mode::kShared);
  EXPECT_GE(shared, 1);
  EXPECT_GE(messages, 1);
  for (const st::PeerTraffic& p : d.stats().by_peer) EXPECT_EQ(p.same_node, p.rank / 2 == world_rank() / 2);
  for (int g = 0; g < 3; ++g) {
    stencil_check::fill(d, {8}, g, kUpload);
    d.exchange();
    EXPECT_EQ(stencil_check::verify(d, {8}, g, {true, true, true}, kDownload), 0);
  }
  EXPECT_EQ(d.stats().received_shm, 3 * shared);
  EXPECT_EQ(d.stats().received_mpi, 3 * messages);
}
