// Collectives on communicators that dtmpi's windows do not cover (issue 21's
// code, found by session 27's review): a window on some ranks only, then
// every blocking collective on MPI_COMM_WORLD, on the window's own
// communicator and on one disjoint from it. A rank of a window used to take
// the non-blocking form of every blocking collective (to progress its
// windows) while the ranks without a window took the blocking one -- which do
// not match: every collective on the world hung. Each result is checked
// against a closed form; a hang is a failure (CTest's timeout). Run with 3-4
// ranks, dtmpi preloaded, DTMPI_RMA=all (and with DTMPI_COLL naming dtmpi's
// algorithms).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

int g_failures = 0;

void expect(bool ok, const char* what, const char* comm_name, int me) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: %s on %s: wrong result\n", me, what, comm_name);
}

// Every blocking collective kind on `comm` (a few elements each), checked.
void collectives(MPI_Comm comm, const char* name) {
  if (comm == MPI_COMM_NULL) return;
  int me = 0, n = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  for (int round = 0; round < 5; ++round) {
    MPI_Barrier(comm);
    int v = me == 0 ? 100 + round : -1;
    MPI_Bcast(&v, 1, MPI_INT, 0, comm);
    expect(v == 100 + round, "MPI_Bcast", name, me);
    long x = me + 1, sum = 0, red = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, comm);
    expect(sum == static_cast<long>(n) * (n + 1) / 2, "MPI_Allreduce", name, me);
    MPI_Reduce(&x, &red, 1, MPI_LONG, MPI_SUM, n - 1, comm);
    if (me == n - 1) expect(red == sum, "MPI_Reduce", name, me);
    std::vector<int> all(static_cast<size_t>(n), -1), blocks(static_cast<size_t>(n)), got(static_cast<size_t>(n), -1);
    MPI_Allgather(&me, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
    for (int r = 0; r < n; ++r) expect(all[static_cast<size_t>(r)] == r, "MPI_Allgather", name, me);
    for (int r = 0; r < n; ++r) blocks[static_cast<size_t>(r)] = me * 1000 + r;
    MPI_Alltoall(blocks.data(), 1, MPI_INT, got.data(), 1, MPI_INT, comm);
    for (int r = 0; r < n; ++r) expect(got[static_cast<size_t>(r)] == r * 1000 + me, "MPI_Alltoall", name, me);
    std::vector<int> gathered(static_cast<size_t>(n), -1);
    MPI_Gather(&me, 1, MPI_INT, gathered.data(), 1, MPI_INT, 0, comm);
    if (me == 0)
      for (int r = 0; r < n; ++r) expect(gathered[static_cast<size_t>(r)] == r, "MPI_Gather", name, me);
    int part = -1;
    MPI_Scatter(all.data(), 1, MPI_INT, &part, 1, MPI_INT, 0, comm);
    expect(part == me, "MPI_Scatter", name, me);
    long prefix = 0;
    MPI_Scan(&x, &prefix, 1, MPI_LONG, MPI_SUM, comm);
    expect(prefix == static_cast<long>(me + 1) * (me + 2) / 2, "MPI_Scan", name, me);
    std::vector<long> ones(static_cast<size_t>(n), 1);
    long mine = 0;
    MPI_Reduce_scatter_block(ones.data(), &mine, 1, MPI_LONG, MPI_SUM, comm);
    expect(mine == n, "MPI_Reduce_scatter_block", name, me);
  }
}

// Whether this rank is the last of the window's communicator `sub` (the origin).
bool last_of(MPI_Comm sub) {
  int me = 0, n = 0;
  MPI_Comm_rank(sub, &me);
  MPI_Comm_size(sub, &n);
  return me == n - 1;
}

// One passive-target epoch to rank 0 of the window: lock, fetch-and-add 1, unlock.
long take_one(MPI_Win win, int lock_type) {
  const long one = 1;
  long prev = -1;
  MPI_Win_lock(lock_type, 0, 0, win);
  MPI_Fetch_and_op(&one, &prev, MPI_LONG, 0, 0, MPI_SUM, win);
  MPI_Win_unlock(0, win);
  return prev;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 3) {
    if (me == 0) std::printf("rma_window_subcomm needs 3 or more ranks\n");
    MPI_Finalize();
    return 77;
  }
  // the window on every rank but the last; a second communicator of the last
  // rank and rank 0 (overlapping the window's, not inside it)
  MPI_Comm sub = MPI_COMM_NULL, edge = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me < n - 1 ? 0 : MPI_UNDEFINED, me, &sub);
  MPI_Comm_split(MPI_COMM_WORLD, me == 0 || me == n - 1 ? 0 : MPI_UNDEFINED, me, &edge);
  long counter = 0;
  MPI_Win win = MPI_WIN_NULL;
  if (sub != MPI_COMM_NULL) MPI_Win_create(&counter, sizeof counter, sizeof counter, MPI_INFO_NULL, sub, &win);
  collectives(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  collectives(edge, "a communicator across the window's edge");
  // DTMPI_RMA_COLLECTIVES=all: a target in a collective on a communicator no
  // window covers (the world's barrier) answers a passive-target epoch of a
  // window member that enters the barrier only after it (hangs without)
  const char* mode = std::getenv("DTMPI_RMA_COLLECTIVES");
  if (mode && std::strcmp(mode, "all") == 0 && sub != MPI_COMM_NULL && last_of(sub)) {
    // rank 0 is in the world's barrier by then (it has nothing else to do)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    expect(take_one(win, MPI_LOCK_EXCLUSIVE) >= 0, "a passive-target epoch to a rank in the world's barrier",
           "the window", me);
  }
  if (mode && std::strcmp(mode, "all") == 0) MPI_Barrier(MPI_COMM_WORLD);
  if (sub != MPI_COMM_NULL) {
    // the window's own communicator: a passive-target epoch from its last
    // rank to rank 0 while rank 0 is in the collectives (they progress it)
    if (last_of(sub)) take_one(win, MPI_LOCK_SHARED);
    collectives(sub, "the window's communicator");
    MPI_Win_free(&win);
  }
  // after the window is gone, the world again
  collectives(MPI_COMM_WORLD, "MPI_COMM_WORLD (window freed)");
  if (edge != MPI_COMM_NULL) MPI_Comm_free(&edge);
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) std::printf("rma_window_subcomm: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
