// Added latency of the interposer on contiguous host traffic: 8-byte
// MPI_Send/MPI_Recv ping-pong through dtmpi (MPI_*) and straight to the system
// MPI (PMPI_*), interleaved in rounds so both see the same machine state.
// Then the system MPI's own cost per call of what dtmpi's transfers use (a
// 232-byte control message, a test of a request that is not complete, one
// test of many): on some machines a call that runs the system MPI's progress
// engine costs microseconds, which decides how dtmpi's progress must poll.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "timing.hpp"

namespace dtmpi::bench {

#ifdef DTMPI_BENCH_FORTRAN
void fortran_latency(int me);  // bench_latency_fortran.cpp
#endif

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
constexpr int kCostRounds = 9;

struct CallCosts {
  double isend = 0, test = 0, testsome = 0, tests = 0;  // seconds per call
};

// Rank 0 times the calls; rank 1 receives the control messages afterwards.
// The receives tested are posted on a tag nobody sends to, then cancelled.
CallCosts call_costs(int me) {
  constexpr int kSends = 200, kTests = 2000, kOpen = 32;
  CallCosts c;
  std::vector<double> isend, test, testsome, tests;
  char msg[232] = {};
  std::vector<char> sink(232 * kSends);
  for (int r = 0; r < kCostRounds; ++r) {
    PMPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
      std::vector<MPI_Request> s(kSends);
      double t0 = MPI_Wtime();
      for (int i = 0; i < kSends; ++i) PMPI_Isend(msg, 232, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &s[static_cast<size_t>(i)]);
      isend.push_back((MPI_Wtime() - t0) / kSends);
      PMPI_Waitall(kSends, s.data(), MPI_STATUSES_IGNORE);
      std::vector<MPI_Request> open(kOpen);
      char dummy[kOpen] = {};
      for (int i = 0; i < kOpen; ++i) PMPI_Irecv(&dummy[i], 1, MPI_BYTE, 1, 99, MPI_COMM_WORLD, &open[static_cast<size_t>(i)]);
      int flag = 0, outcount = 0;
      std::vector<int> idx(kOpen);
      t0 = MPI_Wtime();
      for (int i = 0; i < kTests; ++i) PMPI_Test(&open[0], &flag, MPI_STATUS_IGNORE);
      test.push_back((MPI_Wtime() - t0) / kTests);
      t0 = MPI_Wtime();
      for (int i = 0; i < kTests / 10; ++i) PMPI_Testsome(kOpen, open.data(), &outcount, idx.data(), MPI_STATUSES_IGNORE);
      testsome.push_back((MPI_Wtime() - t0) / (kTests / 10));
      t0 = MPI_Wtime();
      for (int i = 0; i < kTests / 10; ++i)
        for (auto& q : open) PMPI_Test(&q, &flag, MPI_STATUS_IGNORE);
      tests.push_back((MPI_Wtime() - t0) / (kTests / 10));
      for (auto& q : open) {
        PMPI_Cancel(&q);
        PMPI_Wait(&q, MPI_STATUS_IGNORE);
      }
    } else if (me == 1) {
      for (int i = 0; i < kSends; ++i)
        PMPI_Recv(&sink[static_cast<size_t>(i) * 232], 232, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  if (me == 0) {
    c.isend = median(isend);
    c.test = median(test);
    c.testsome = median(testsome);
    c.tests = median(tests);
  }
  return c;
}

}  // namespace

int bench_latency(int argc, char** argv) {
  const bool fortran = argc > 1 && std::string(argv[1]) == "--fortran";
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
  const CallCosts costs = call_costs(me);
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
    std::printf("\nsystem MPI cost per call (rank 0, medians of %d rounds)\n", kCostRounds);
    std::printf("%-44s %10.1f ns\n", "PMPI_Isend of 232 B to rank 1", costs.isend * 1e9);
    std::printf("%-44s %10.1f ns\n", "PMPI_Test of a receive not yet matched", costs.test * 1e9);
    std::printf("%-44s %10.1f ns\n", "PMPI_Testsome over 32 such receives", costs.testsome * 1e9);
    std::printf("%-44s %10.1f ns\n", "32 x PMPI_Test, one per receive", costs.tests * 1e9);
  }
  if (fortran) {
#ifdef DTMPI_BENCH_FORTRAN
    fortran_latency(me);
#else
    if (me == 0) std::printf("\n--fortran: this build found no Fortran library of its MPI\n");
#endif
  }
  return 0;
}

}  // namespace dtmpi::bench
