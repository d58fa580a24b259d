// Passive-target progress below MPI_THREAD_MULTIPLE (no progress thread):
// the target sits in a blocking call of each kind while the origin needs it
// to answer lock / fetch-and-op / unlock epochs before it sends what that
// call waits for (MPICH's test rma/adlb_mimic1 hung this way in MPI_Recv).
// For every kind, rank 0 (the window's owner) enters the call at once; the
// last rank takes 20 values from rank 0's counter, then completes the call's
// partner; the values must be distinct. A hang is a failure (CTest's
// timeout); the kind being run is printed first. Run with 2-4 ranks,
// DTMPI_RMA=all on a CPU machine.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int g_rank = 0, g_size = 0, g_last = 0;
long* g_counter = nullptr;
MPI_Win g_win;
long g_taken_sum = 0;
int g_takes = 0;

// The origin's epochs: lock, fetch-and-op, unlock on rank 0's counter.
void take_values() {
  const long one = 1;
  for (int i = 0; i < 20; ++i) {
    long prev = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, g_win);
    MPI_Fetch_and_op(&one, &prev, MPI_LONG, 0, 0, MPI_SUM, g_win);
    MPI_Win_unlock(0, g_win);
    g_taken_sum += prev;
    ++g_takes;
  }
}

// One kind: rank 0 runs `target`, the last rank takes values and then runs
// `origin` (the partner of rank 0's call); other ranks run `others`.
template <class Target, class Origin, class Others>
void round(const char* kind, Target target, Origin origin, Others others) {
  if (g_rank == 0) std::printf("%s\n", kind), std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    target();
  } else if (g_rank == g_last) {
    take_values();
    origin();
  } else {
    others();
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_last = g_size - 1;
  if (g_size < 2) {
    MPI_Finalize();
    return 77;
  }
  MPI_Win_allocate(g_rank == 0 ? sizeof(long) : 0, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &g_counter, &g_win);
  if (g_rank == 0) *g_counter = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const int last = g_last;
  int token = 7;
  std::vector<char> big(1 << 20, 1);  // past any eager limit: a rendezvous
  const auto nothing = [] {};
  round("MPI_Recv", [&] { MPI_Recv(&token, 1, MPI_INT, last, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); },
        [&] { MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD); }, nothing);
  round("MPI_Recv of 1 MiB", [&] { MPI_Recv(big.data(), 1 << 20, MPI_BYTE, last, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); },
        [&] { MPI_Send(big.data(), 1 << 20, MPI_BYTE, 0, 1, MPI_COMM_WORLD); }, nothing);
  round("MPI_Ssend", [&] { MPI_Ssend(&token, 1, MPI_INT, last, 2, MPI_COMM_WORLD); },
        [&] { MPI_Recv(&token, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }, nothing);
  round("MPI_Send of 1 MiB", [&] { MPI_Send(big.data(), 1 << 20, MPI_BYTE, last, 3, MPI_COMM_WORLD); },
        [&] { MPI_Recv(big.data(), 1 << 20, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }, nothing);
  round("MPI_Sendrecv", [&] {
          int in = 0;
          MPI_Sendrecv(&token, 1, MPI_INT, last, 4, &in, 1, MPI_INT, last, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        },
        [&] {
          int in = 0;
          MPI_Sendrecv(&token, 1, MPI_INT, 0, 4, &in, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        },
        nothing);
  round("MPI_Sendrecv_replace",
        [&] { MPI_Sendrecv_replace(&token, 1, MPI_INT, last, 5, last, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); },
        [&] { MPI_Sendrecv_replace(&token, 1, MPI_INT, 0, 5, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }, nothing);
  round("MPI_Probe", [&] {
          MPI_Probe(last, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Recv(&token, 1, MPI_INT, last, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        },
        [&] { MPI_Send(&token, 1, MPI_INT, 0, 6, MPI_COMM_WORLD); }, nothing);
  round("MPI_Mprobe", [&] {
          MPI_Message m;
          MPI_Mprobe(last, 7, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
          MPI_Mrecv(&token, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
        },
        [&] { MPI_Send(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD); }, nothing);
  round("MPI_Wait", [&] {
          MPI_Request r;
          MPI_Irecv(&token, 1, MPI_INT, last, 8, MPI_COMM_WORLD, &r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        },
        [&] { MPI_Send(&token, 1, MPI_INT, 0, 8, MPI_COMM_WORLD); }, nothing);
  round("MPI_Waitall", [&] {
          MPI_Request r[2];
          int a = 0, b = 0;
          MPI_Irecv(&a, 1, MPI_INT, last, 9, MPI_COMM_WORLD, &r[0]);
          MPI_Irecv(&b, 1, MPI_INT, last, 10, MPI_COMM_WORLD, &r[1]);
          MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        },
        [&] {
          MPI_Send(&token, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
          MPI_Send(&token, 1, MPI_INT, 0, 10, MPI_COMM_WORLD);
        },
        nothing);
  // the collectives: every rank but the origin enters at once
  long v = 1, out = 0;
  const auto bcast = [&] { MPI_Bcast(&v, 1, MPI_LONG, g_last, MPI_COMM_WORLD); };
  round("MPI_Bcast", bcast, bcast, bcast);
  const auto allreduce = [&] { MPI_Allreduce(&v, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); };
  round("MPI_Allreduce", allreduce, allreduce, allreduce);
  const auto reduce = [&] { MPI_Reduce(&v, &out, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD); };
  round("MPI_Reduce", reduce, reduce, reduce);
  std::vector<long> all(static_cast<size_t>(g_size));
  const auto gather = [&] { MPI_Gather(&v, 1, MPI_LONG, all.data(), 1, MPI_LONG, 0, MPI_COMM_WORLD); };
  round("MPI_Gather", gather, gather, gather);
  const auto allgather = [&] { MPI_Allgather(&v, 1, MPI_LONG, all.data(), 1, MPI_LONG, MPI_COMM_WORLD); };
  round("MPI_Allgather", allgather, allgather, allgather);
  std::vector<long> sendall(static_cast<size_t>(g_size), 1);
  const auto alltoall = [&] { MPI_Alltoall(sendall.data(), 1, MPI_LONG, all.data(), 1, MPI_LONG, MPI_COMM_WORLD); };
  round("MPI_Alltoall", alltoall, alltoall, alltoall);
  const auto scatter = [&] { MPI_Scatter(sendall.data(), 1, MPI_LONG, &out, 1, MPI_LONG, g_last, MPI_COMM_WORLD); };
  round("MPI_Scatter", scatter, scatter, scatter);
  const auto scan = [&] { MPI_Scan(&v, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); };
  round("MPI_Scan", scan, scan, scan);

  MPI_Barrier(MPI_COMM_WORLD);
  long sum = 0;
  int takes = 0;
  MPI_Allreduce(&g_taken_sum, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&g_takes, &takes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const long n = takes;
  const bool ok = sum == n * (n - 1) / 2;  // the values 0 .. n-1, each once
  if (g_rank == 0) std::printf("%ld values taken, sum %ld (expected %ld): %s\n", n, sum, n * (n - 1) / 2, ok ? "ok" : "WRONG");
  MPI_Win_free(&g_win);
  MPI_Finalize();
  return ok ? 0 : 1;
}
