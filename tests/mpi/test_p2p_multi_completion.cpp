// Completion rules of multi-message sends (host test mode, as
// test_p2p_multi.cpp, in the same binary): a send must not complete while its
// receiver may still need the sender (IPC fallback), and sends that the system
// MPI completes inline, which can share one request handle, keep their own
// resources.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/mpi_world.hpp"
#include "mpi/p2p_multi.hpp"

using dtmpi::testing::barrier;
using dtmpi::testing::stat_value;
using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

// A sender whose send completed may block in a call of the system MPI that
// dtmpi never sees (PMPI_Barrier here) while its receiver only then takes the
// descriptor: in the IPC-fallback mode the receiver asks the sender for the
// payload, so the send must not have completed before that answer (it hung
// before: the send completed at the descriptor's delivery). Blocking and
// non-blocking sends, both directions; the watchdog turns a hang into a failure.
TEST(MultiMessageP2P, SenderMayBlockInTheSystemMpi) {
  const int me = world_rank(), n = world_size();
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  MPI_Datatype vec;
  MPI_Type_vector(32768, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  std::vector<int> src(65536), dst(65536, -1);
  alarm(60);
  struct Disarm {
    ~Disarm() { alarm(0); }  // also when an assertion returns early
  } disarm;
  for (int round = 0; round < 4; ++round) {
    const int sender = round % 2, receiver = 1 - sender;
    for (int i = 0; i < 65536; ++i) src[static_cast<size_t>(i)] = round * 1000000 + i;
    std::fill(dst.begin(), dst.end(), -1);
    if (me == sender) {
      if (round < 2) {
        ASSERT_EQ(MPI_Send(src.data(), 1, vec, receiver, 40 + round, MPI_COMM_WORLD), MPI_SUCCESS);
      } else {
        MPI_Request r;
        ASSERT_EQ(MPI_Isend(src.data(), 1, vec, receiver, 40 + round, MPI_COMM_WORLD, &r), MPI_SUCCESS);
        ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
      }
    } else if (me == receiver) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the sender is in the barrier by now
      ASSERT_EQ(MPI_Recv(dst.data(), 1, vec, sender, 40 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
      for (int i = 0; i < 32768; ++i) ASSERT_EQ(dst[static_cast<size_t>(2 * i)], round * 1000000 + 2 * i);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Type_free(&vec);
}

// Small staged sends that Open MPI completes inline all get one static
// request handle (ompi_request_empty); several in flight at once must not
// lose each other's staging buffers (they leaked: the older was overwritten).
TEST(MultiMessageP2P, SharedRequestHandlesLeakNothing) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  MPI_Datatype vec;
  MPI_Type_vector(64, 1, 2, MPI_INT, &vec);  // 256 B packed, blocks of 4 B: staged by dtmpi
  MPI_Type_commit(&vec);
  constexpr int kSends = 16;
  std::vector<std::vector<int>> src(kSends, std::vector<int>(128)), dst(kSends, std::vector<int>(128, -1));
  barrier();
  const uint64_t lent0 = stat_value("staging buffers lent "), returned0 = stat_value(", returned ");
  std::vector<MPI_Request> reqs;
  for (int k = 0; k < kSends; ++k) {
    for (int i = 0; i < 128; ++i) src[static_cast<size_t>(k)][static_cast<size_t>(i)] = me * 100000 + k * 1000 + i;
    reqs.emplace_back();
    ASSERT_EQ(MPI_Irecv(dst[static_cast<size_t>(k)].data(), 1, vec, left, 50 + k, MPI_COMM_WORLD, &reqs.back()),
              MPI_SUCCESS);
  }
  for (int k = 0; k < kSends; ++k) {
    reqs.emplace_back();
    ASSERT_EQ(MPI_Isend(src[static_cast<size_t>(k)].data(), 1, vec, right, 50 + k, MPI_COMM_WORLD, &reqs.back()),
              MPI_SUCCESS);
  }
  ASSERT_EQ(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), MPI_SUCCESS);
  for (int k = 0; k < kSends; ++k)
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(dst[static_cast<size_t>(k)][static_cast<size_t>(2 * i)], left * 100000 + k * 1000 + 2 * i);
  barrier();
  const uint64_t lent = stat_value("staging buffers lent "), returned = stat_value(", returned ");
  EXPECT_GT(lent, lent0);  // the sends were staged (else the test proves nothing)
  EXPECT_EQ(lent - lent0, returned - returned0);
  MPI_Type_free(&vec);
}
