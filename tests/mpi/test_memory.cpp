// dtmpi's own memory (issue 28), by its accounting of its structures
// (dtmpi_memory_bytes): what it holds per rank of the job stays a few bytes
// per peer, at most 4 MiB scaled to 3072 ranks, and communicators and types
// the program creates and frees leave nothing behind. No timing, no RSS: the
// RSS sweep is scripts/memory-per-rank.sh (bench/results/memory-per-rank-*).
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "dtmpi/dtmpi.h"

namespace {

constexpr long long kBoundAt3072 = 4ll << 20;
// peer facts (8 B) and three per-peer flags, and 4 B per translated
// communicator rank (a handful of communicators): far below this
constexpr long long kMaxBytesPerRank = 64;

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Strided sends around a ring on `comm` (small blocks: dtmpi packs them).
void ring_exchange(MPI_Comm comm) {
  int me = 0, n = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  MPI_Datatype column;
  MPI_Type_vector(64, 1, 8, MPI_DOUBLE, &column);
  MPI_Type_commit(&column);
  std::vector<double> out(512, me), in(512, -1);
  MPI_Sendrecv(out.data(), 1, column, (me + 1) % n, 7, in.data(), 1, column, (me + n - 1) % n, 7, comm,
               MPI_STATUS_IGNORE);
  EXPECT_EQ(in[8], (me + n - 1) % n);
  MPI_Type_free(&column);
}

long long per_rank_bytes() { return (dtmpi_memory_bytes(6144) - dtmpi_memory_bytes(3072)) / 3072; }

TEST(Memory, PerRankStructuresStayFewBytesPerPeer) {
  ASSERT_TRUE(dtmpi_active());
  ring_exchange(MPI_COMM_WORLD);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  ring_exchange(dup);
  const int n = world_size();
  EXPECT_EQ(dtmpi_memory_bytes(0), dtmpi_memory_bytes(n)) << "<= 0 must mean this job's size";
  const long long per_rank = per_rank_bytes();
  EXPECT_GE(per_rank, 8) << "the peer facts are per world rank: " << dtmpi_memory();
  EXPECT_LE(per_rank, kMaxBytesPerRank) << dtmpi_memory();
  // linear in the ranks: no part grows faster than per peer
  EXPECT_EQ(dtmpi_memory_bytes(3072) - dtmpi_memory_bytes(1536), per_rank * 1536);
  EXPECT_LE(dtmpi_memory_bytes(3072), kBoundAt3072) << dtmpi_memory();
  MPI_Comm_free(&dup);
}

TEST(Memory, FreedCommunicatorsAndTypesLeaveNothing) {
  ring_exchange(MPI_COMM_WORLD);  // first-use structures made before the baseline
  for (int i = 0; i < 4; ++i) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    ring_exchange(c);
    MPI_Comm_free(&c);
  }
  const long long before = dtmpi_memory_bytes(3072), per_rank = per_rank_bytes();
  for (int i = 0; i < 50; ++i) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    ring_exchange(c);
    MPI_Comm_free(&c);
  }
  EXPECT_EQ(per_rank_bytes(), per_rank) << "a freed communicator's rank map stayed: " << dtmpi_memory();
  // hash tables keep their buckets: allow them, not an entry per type
  EXPECT_LE(dtmpi_memory_bytes(3072), before + 4096) << dtmpi_memory();
}

}  // namespace
