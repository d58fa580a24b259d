// transport::NodeChannels (src/transport/node_channels.hpp) under mpiexec:
// every rank sends to every other rank through its channel for several
// rounds, sizes differing per pair, the ranks skewed by sleeps; the buffer
// handshake (a sender two rounds ahead of its receiver may not write); and
// the collective null where the ranks span (emulated) nodes.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/config.hpp"
#include "transport/node_channels.hpp"

using dtmpi::transport::NodeChannels;

namespace {

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int n = 0;
  MPI_Comm_size(c, &n);
  return n;
}
// Bytes rank `from` sends rank `to` per round (none from a rank to itself,
// none between ranks 0 and 2: a pair without a channel).
size_t bytes(int from, int to) {
  if (from == to || (from == 0 && to == 2) || (from == 2 && to == 0)) return 0;
  return static_cast<size_t>(61 + 40 * from + 8 * to);
}
unsigned char pattern(uint64_t round, int from, int to, size_t i) {
  return static_cast<unsigned char>(round * 31 + static_cast<uint64_t>(from) * 7 + static_cast<uint64_t>(to) * 3 + i);
}
std::unique_ptr<NodeChannels> make(MPI_Comm c) {
  const int me = rank_of(c), n = size_of(c);
  std::vector<size_t> inbound(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) inbound[static_cast<size_t>(r)] = bytes(r, me);
  auto ch = NodeChannels::create(c, inbound);
  EXPECT_TRUE(ch) << ch.error().what;
  return ch ? std::move(ch.value()) : nullptr;
}

}  // namespace

TEST(NodeChannels, RoundsBetweenEveryPairSkewed) {
  auto ch = make(MPI_COMM_WORLD);
  ASSERT_NE(ch, nullptr) << "no shared memory between ranks of one machine";
  const int me = rank_of(MPI_COMM_WORLD), n = size_of(MPI_COMM_WORLD);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ch->to(r).bytes, bytes(me, r));
    EXPECT_EQ(ch->to(r).open(), bytes(me, r) > 0);
    EXPECT_EQ(ch->from(r).open(), bytes(r, me) > 0);
  }
  for (uint64_t round = 1; round <= 6; ++round) {
    if (static_cast<uint64_t>(me) == round % static_cast<uint64_t>(n))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int r = 0; r < n; ++r) {
      const auto& c = ch->to(r);
      if (!c.open()) continue;
      while (!NodeChannels::writable(c, round)) std::this_thread::yield();
      char* out = NodeChannels::write_buffer(c, round);
      for (size_t i = 0; i < c.bytes; ++i) out[i] = static_cast<char>(pattern(round, me, r, i));
      NodeChannels::end_write(c, round);
    }
    if (static_cast<uint64_t>(me) == (round + 1) % static_cast<uint64_t>(n))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int r = 0; r < n; ++r) {
      const auto& c = ch->from(r);
      if (!c.open()) continue;
      while (!NodeChannels::readable(c, round)) std::this_thread::yield();
      const char* in = NodeChannels::read(c, round);
      size_t wrong = 0;
      for (size_t i = 0; i < c.bytes; ++i) wrong += static_cast<unsigned char>(in[i]) != pattern(round, r, me, i);
      EXPECT_EQ(wrong, 0u) << "round " << round << " from rank " << r;
      NodeChannels::end_read(c, round);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Rank 0 writes rounds 1 and 2 to rank 1, which reads nothing yet: round 3
// would overwrite round 1's buffer, so it is not writable until rank 1 has
// read round 1.
TEST(NodeChannels, SenderTwoRoundsAheadWaits) {
  auto ch = make(MPI_COMM_WORLD);
  ASSERT_NE(ch, nullptr);
  const int me = rank_of(MPI_COMM_WORLD);
  if (me == 0) {
    const auto& c = ch->to(1);
    EXPECT_TRUE(NodeChannels::writable(c, 1));
    NodeChannels::end_write(c, 1);
    EXPECT_TRUE(NodeChannels::writable(c, 2));  // the other buffer
    NodeChannels::end_write(c, 2);
    EXPECT_FALSE(NodeChannels::writable(c, 3)) << "round 1 not read yet";
  }
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0 has checked
  if (me == 1) {
    const auto& c = ch->from(0);
    EXPECT_TRUE(NodeChannels::readable(c, 2));
    NodeChannels::end_read(c, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // rank 1 has read round 1
  if (me == 0) {
    EXPECT_TRUE(NodeChannels::writable(ch->to(1), 3));
    EXPECT_FALSE(NodeChannels::writable(ch->to(1), 4)) << "round 2 not read yet";
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Ranks of different (emulated) nodes get no channels -- all of them, never
// some: the collective null a caller falls back on.
TEST(NodeChannels, NoneAcrossNodes) {
  setenv("DTMPI_RANKS_PER_NODE", "1", 1);
  dtmpi::runtime::reload_config();
  const int me = rank_of(MPI_COMM_WORLD), n = size_of(MPI_COMM_WORLD);
  std::vector<size_t> inbound(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) inbound[static_cast<size_t>(r)] = bytes(r, me);
  auto ch = NodeChannels::create(MPI_COMM_WORLD, inbound);
  unsetenv("DTMPI_RANKS_PER_NODE");
  dtmpi::runtime::reload_config();
  ASSERT_TRUE(ch) << ch.error().what;
  EXPECT_EQ(ch.value(), nullptr);
}
