// Synchronization calls of several threads at once, each thread on its own
// window (MPI_THREAD_MULTIPLE; the pattern of MPICH's threads/rma/multifence):
// a thread blocked in its window's fence, waiting for the other ranks, must not
// keep the other threads from their windows' fences -- which those ranks'
// threads wait for. Each thread: fence, a put from rank 1 to rank 0, fence,
// a get by the last rank, fence, then a passive epoch (lock, accumulate,
// unlock) on rank 0; every element checked. A hang is a failure (CTest's
// timeout). Run with 2-3 ranks, DTMPI_RMA=all (exit 77 without THREAD_MULTIPLE).
#include <mpi.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "thread_multiple.hpp"

namespace {

constexpr int kThreads = 4;
constexpr int kCount = 1024;

struct PerThread {
  MPI_Win win = MPI_WIN_NULL;
  int* mem = nullptr;
  int errors = 0;
};

void run(PerThread& t, int id, int rank, int size) {
  std::vector<int> buf(kCount);
  for (int i = 0; i < kCount; ++i) buf[static_cast<size_t>(i)] = rank * 100 + id;
  MPI_Win_fence(0, t.win);
  if (rank == 1) MPI_Put(buf.data(), kCount, MPI_INT, 0, 0, kCount, MPI_INT, t.win);
  MPI_Win_fence(0, t.win);
  if (rank == 0)
    for (int i = 0; i < kCount; ++i) t.errors += t.mem[i] != 100 + id;
  if (rank == size - 1) MPI_Get(buf.data(), kCount, MPI_INT, 0, 0, kCount, MPI_INT, t.win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, t.win);  // the active epochs end here
  if (rank == size - 1)
    for (int i = 0; i < kCount; ++i) t.errors += buf[static_cast<size_t>(i)] != 100 + id;
  // a passive epoch of every rank on rank 0
  const int one = 1;
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, t.win);
  MPI_Accumulate(&one, 1, MPI_INT, 0, kCount - 1, 1, MPI_INT, MPI_SUM, t.win);
  MPI_Win_unlock(0, t.win);
  MPI_Win_fence(MPI_MODE_NOPRECEDE, t.win);  // every rank's unlock is done
  if (rank == 0) t.errors += t.mem[kCount - 1] != 100 + id + size;
}

}  // namespace

int main(int argc, char** argv) {
  init_thread_multiple_or_skip(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<PerThread> per(kThreads);
  for (PerThread& t : per)
    MPI_Win_allocate(kCount * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &t.mem, &t.win);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id)
      threads.emplace_back(run, std::ref(per[static_cast<size_t>(id)]), id, rank, size);
    for (std::thread& th : threads) th.join();
  }
  int errors = 0, total = 0;
  for (PerThread& t : per) {
    errors += t.errors;
    MPI_Win_free(&t.win);
  }
  MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf(total ? "rma_thread_sync: %d wrong elements\n" : "rma_thread_sync: no errors\n", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
