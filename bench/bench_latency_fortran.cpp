// `dtmpi-bench latency --fortran`: the pass-through cost of a Fortran MPI call
// (issue 26), measured like the C one: an 8-byte ping-pong through the Fortran
// entry points (mpi_send_ / mpi_recv_ with INTEGER handles and a Fortran
// status), interleaved in rounds with the same through the system MPI.
// Open MPI: dtmpi's own mpi_send_ (src/interpose/fortran, linked into this
// program) against Open MPI's pmpi_send_ (libmpi_mpifh: its Fortran binding,
// straight to PMPI_Send, i.e. what a Fortran program gets without dtmpi).
// MPICH: dtmpi defines no Fortran symbol; MPICH's mpi_send_ calls the C
// MPI_Send, which here is dtmpi's, so the line is MPICH's binding + dtmpi,
// shown beside the C calls (its binding's own cost is the difference).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

using FSend = void (*)(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
using FRecv = void (*)(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
extern "C" {
void mpi_send_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_recv_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
#ifdef DTMPI_BENCH_FORTRAN_OWN
void pmpi_send_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void pmpi_recv_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
#endif
}

namespace dtmpi::bench {

namespace {

double fortran_pingpong(int me, int iters, FSend send, FRecv recv) {
  char buf[8] = {};
  MPI_Fint n = 8, type = MPI_Type_c2f(MPI_BYTE), peer = 1 - me, tag = 0, comm = MPI_Comm_c2f(MPI_COMM_WORLD), ierr = 0;
  MPI_Fint status[sizeof(MPI_Status) / sizeof(MPI_Fint)] = {};
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (me == 0) {
      send(buf, &n, &type, &peer, &tag, &comm, &ierr);
      recv(buf, &n, &type, &peer, &tag, &comm, status, &ierr);
    } else if (me == 1) {
      recv(buf, &n, &type, &peer, &tag, &comm, status, &ierr);
      send(buf, &n, &type, &peer, &tag, &comm, &ierr);
    }
  }
  return (MPI_Wtime() - t0) / iters / 2;
}

void send_c(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* p, MPI_Fint* g, MPI_Fint* c, MPI_Fint* e) {
  *e = PMPI_Send(b, *n, MPI_Type_f2c(*t), *p, *g, MPI_Comm_f2c(*c));
}
void recv_c(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* p, MPI_Fint* g, MPI_Fint* c, MPI_Fint*, MPI_Fint* e) {
  *e = PMPI_Recv(b, *n, MPI_Type_f2c(*t), *p, *g, MPI_Comm_f2c(*c), MPI_STATUS_IGNORE);
}

}  // namespace

void fortran_latency(int me) {
  struct Row {
    const char* name;
    FSend send;
    FRecv recv;
    std::vector<double> t;
  };
  std::vector<Row> rows;
  rows.push_back({"C PMPI_Send/PMPI_Recv", send_c, recv_c, {}});
#ifdef DTMPI_BENCH_FORTRAN_OWN
  rows.push_back({"Fortran, Open MPI's binding", pmpi_send_, pmpi_recv_, {}});
  rows.push_back({"Fortran, through dtmpi", mpi_send_, mpi_recv_, {}});
#else
  rows.push_back({"Fortran, MPICH's binding + dtmpi", mpi_send_, mpi_recv_, {}});
#endif
  const int iters = 20000, rounds = 15;
  for (auto& r : rows) fortran_pingpong(me, 2000, r.send, r.recv);  // warm-up
  for (int k = 0; k < rounds; ++k)
    for (auto& r : rows) r.t.push_back(fortran_pingpong(me, iters, r.send, r.recv));
  if (me != 0) return;
  std::printf("\n8-byte ping-pong through the Fortran entry points, one-way latency (median of %d rounds x %d)\n",
              rounds, iters);
  double base = 0;
  for (auto& r : rows) {
    std::sort(r.t.begin(), r.t.end());
    const double m = r.t[rounds / 2] * 1e9;
    if (&r == &rows[1]) base = m;
    std::printf("%-34s %10.1f ns  (min %.1f, max %.1f)", r.name, m, r.t.front() * 1e9, r.t.back() * 1e9);
    if (&r == &rows[2]) std::printf("  added by dtmpi %.1f ns (%.2f%%)", m - base, (m - base) / base * 100);
    std::printf("\n");
  }
}

}  // namespace dtmpi::bench
