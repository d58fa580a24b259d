// MPI_Alloc_mem's memory through libdtmpi (issue 29): added to the host
// ranges (classified without a driver call) from its return until
// MPI_Free_mem or PMPI_Free_mem, which drop it before the system MPI frees
// it; messages to and from it arrive intact. Counted by dtmpi_stats().
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>

#include "common/dtmpi_stats.hpp"

namespace {

constexpr const char* kKey = "MPI_Alloc_mem ranges proven host ";
uint64_t ranges() { return dtmpi::testing::stat_value(kKey); }

TEST(AllocMem, ProvenHostUntilFreed) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const uint64_t before = ranges();
  char* mem = nullptr;
  ASSERT_EQ(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &mem), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before + 1);
  const int peer = (me + 1) % n, from = (me + n - 1) % n;
  std::memset(mem, 0, 1 << 20);
  for (int i = 0; i < 8; ++i) mem[i] = static_cast<char>(me * 10 + i);
  // an 8-byte exchange out of its first bytes into its last ones
  MPI_Sendrecv(mem, 8, MPI_BYTE, peer, 0, mem + (1 << 20) - 8, 8, MPI_BYTE, from, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(mem[(1 << 20) - 8 + i], static_cast<char>(from * 10 + i)) << i;
  ASSERT_EQ(MPI_Free_mem(mem), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before);
}

// The profiling name (Open MPI's Fortran MPI_FREE_MEM, PMPI tools) drops it too.
TEST(AllocMem, PmpiFreeMemDropsIt) {
  const uint64_t before = ranges();
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(MPI_Alloc_mem(4096, MPI_INFO_NULL, &a), MPI_SUCCESS);
  ASSERT_EQ(MPI_Alloc_mem(100, MPI_INFO_NULL, &b), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before + 2);
  ASSERT_EQ(PMPI_Free_mem(a), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before + 1);
  ASSERT_EQ(MPI_Free_mem(b), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before);
}

TEST(AllocMem, NothingAddedForNoBytes) {
  const uint64_t before = ranges();
  void* a = nullptr;
  ASSERT_EQ(MPI_Alloc_mem(0, MPI_INFO_NULL, &a), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before);
  ASSERT_EQ(MPI_Free_mem(a), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before);
}

// Many at once, freed in another order: each drop removes its own entry.
TEST(AllocMem, ManyFreedOutOfOrder) {
  const uint64_t before = ranges();
  void* mem[20] = {};
  for (int i = 0; i < 20; ++i) ASSERT_EQ(MPI_Alloc_mem(1000 + i * 5000, MPI_INFO_NULL, &mem[i]), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before + 20);
  for (int i = 0; i < 20; i += 2) ASSERT_EQ(MPI_Free_mem(mem[i]), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before + 10);
  for (int i = 1; i < 20; i += 2) ASSERT_EQ(MPI_Free_mem(mem[i]), MPI_SUCCESS);
  EXPECT_EQ(ranges(), before);
}

}  // namespace
