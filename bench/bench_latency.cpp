// Added latency of the interposer on contiguous host traffic: 8-byte
// MPI_Send/MPI_Recv ping-pong through dtmpi (MPI_*) and straight to the system
// MPI (PMPI_*), interleaved in rounds so both see the same machine state.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace dtmpi::bench {

namespace {
template <class Send, class Recv>
double pingpong(int me, int iters, Send send, Recv recv) {
  char buf[8] = {};
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (me == 0) {
      send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) / iters / 2;  // one-way
}
}  // namespace

int bench_latency(int, char**) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2) {
    if (me == 0) std::fprintf(stderr, "latency needs 2 ranks\n");
    return 2;
  }
  const int iters = 20000, rounds = 15;
  std::vector<double> direct, via;
  pingpong(me, 2000, PMPI_Send, PMPI_Recv);  // warm-up
  for (int r = 0; r < rounds; ++r) {
    direct.push_back(pingpong(me, iters, PMPI_Send, PMPI_Recv));
    via.push_back(pingpong(me, iters, MPI_Send, MPI_Recv));
  }
  std::sort(direct.begin(), direct.end());
  std::sort(via.begin(), via.end());
  if (me == 0) {
    const double d = direct[rounds / 2] * 1e9, v = via[rounds / 2] * 1e9;
    std::printf("8-byte MPI_Send/MPI_Recv ping-pong, one-way latency (median of %d rounds x %d)\n",
                rounds, iters);
    std::printf("%-28s %10.1f ns  (min %.1f, max %.1f)\n", "system MPI (PMPI_*)", d,
                direct.front() * 1e9, direct.back() * 1e9);
    std::printf("%-28s %10.1f ns  (min %.1f, max %.1f)\n", "through dtmpi (MPI_*)", v,
                via.front() * 1e9, via.back() * 1e9);
    std::printf("%-28s %10.1f ns  (%.2f%%)\n", "added by dtmpi", v - d, (v - d) / d * 100);
  }
  return 0;
}

}  // namespace dtmpi::bench
