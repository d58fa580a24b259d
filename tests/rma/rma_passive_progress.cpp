// Passive-target progress while the target sits in a blocking call of the
// system MPI (the pattern of mpi4py's util.sync.Counter): rank 0 owns a
// counter and goes straight into MPI_Allreduce; every other rank takes 50
// values with lock / fetch-and-op / unlock on it, then joins the Allreduce.
// Then the same with rank 0 inside the creation of a second window (a
// collective of its own, which the others join only after their 50 values:
// dtmpi held its one-sided lock through the creation, so the progress thread
// could not answer and the job hung). With MPI_THREAD_MULTIPLE dtmpi's
// progress thread answers for rank 0; the values taken must be
// 2 * 50 * (size - 1) distinct ones. A hang is a failure (CTest's timeout).
// Run with 2-4 ranks, DTMPI_RMA=all on a CPU machine.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "thread_multiple.hpp"

int main(int argc, char** argv) {
  init_thread_multiple_or_skip(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long* counter = nullptr;
  MPI_Win win;
  MPI_Win_allocate(rank == 0 ? sizeof(long) : 0, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &counter, &win);
  if (rank == 0) *counter = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  constexpr int kTakes = 50;
  std::vector<long> mine;
  auto take = [&] {
    if (rank == 0) return;
    const long one = 1;
    for (int i = 0; i < kTakes; ++i) {
      long prev = -1;
      MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
      MPI_Fetch_and_op(&one, &prev, MPI_LONG, 0, 0, MPI_SUM, win);
      MPI_Win_unlock(0, win);
      mine.push_back(prev);
    }
  };
  take();
  // rank 0 reaches this at once and blocks in the system MPI's Allreduce
  long sum = 0, local = 0;
  for (long v : mine) local += v;
  MPI_Allreduce(&local, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  const long n = static_cast<long>(kTakes) * (size - 1);
  bool ok = sum == n * (n - 1) / 2;  // the values 0 .. n-1, each once
  if (rank == 0) std::printf("%ld values taken, sum %ld (expected %ld): %s\n", n, sum, n * (n - 1) / 2, ok ? "ok" : "WRONG");
  // rank 0 goes straight into creating a second window; the others join
  // that creation after 50 more values each
  mine.clear();
  take();
  long* second = nullptr;
  MPI_Win win2;
  MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &second, &win2);
  local = 0;
  for (long v : mine) local += v;
  MPI_Allreduce(&local, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  const long want = (2 * n) * (2 * n - 1) / 2 - n * (n - 1) / 2;  // the values n .. 2n-1, each once
  ok = ok && sum == want;
  if (rank == 0)
    std::printf("%ld more values taken while rank 0 created a window, sum %ld (expected %ld): %s\n", n, sum, want,
                sum == want ? "ok" : "WRONG");
  MPI_Win_free(&win2);
  MPI_Win_free(&win);
  MPI_Finalize();
  return ok ? 0 : 1;
}
