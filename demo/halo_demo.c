/* An unmodified MPI program: ranks in a ring exchange the six faces of a 3D
 * block of doubles described by subarray datatypes, once with MPI_Sendrecv of
 * the datatypes and once by MPI_Pack-ing the faces into one message
 * (MPI_PACKED) and MPI_Unpack-ing on arrival. It prints the time of each phase
 * and a checksum of all received bytes, so runs with and without dtmpi can be
 * compared. Usage: dtmpi-demo [N] [iterations]                              */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t fnv1a(const unsigned char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 96;
  const int iters = argc > 2 ? atoi(argv[2]) : 20;
  const int r = 3; /* halo radius */
  const int m = n + 2 * r;
  double* grid = malloc(sizeof(double) * (size_t)m * m * m);
  for (size_t i = 0; i < (size_t)m * m * m; ++i) grid[i] = rank * 1e6 + (double)i;

  /* faces: for each axis, the interior slab next to the low and high halo
   * (send) and the halo itself (receive) */
  MPI_Datatype send_face[6], recv_face[6];
  int sizes[3] = {m, m, m};
  for (int axis = 0; axis < 3; ++axis) {
    for (int side = 0; side < 2; ++side) {
      int sub[3] = {n, n, n}, st_send[3] = {r, r, r}, st_recv[3] = {r, r, r};
      sub[axis] = r;
      st_send[axis] = side == 0 ? r : n;
      st_recv[axis] = side == 0 ? 0 : n + r;
      MPI_Type_create_subarray(3, sizes, sub, st_send, MPI_ORDER_C, MPI_DOUBLE, &send_face[2 * axis + side]);
      MPI_Type_create_subarray(3, sizes, sub, st_recv, MPI_ORDER_C, MPI_DOUBLE, &recv_face[2 * axis + side]);
      MPI_Type_commit(&send_face[2 * axis + side]);
      MPI_Type_commit(&recv_face[2 * axis + side]);
    }
  }
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;

  /* phase 1: the datatypes straight to MPI_Sendrecv */
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int it = 0; it < iters; ++it)
    for (int f = 0; f < 6; ++f)
      MPI_Sendrecv(grid, 1, send_face[f], right, f, grid, 1, recv_face[f ^ 1], left, f,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  double t_sendrecv = (MPI_Wtime() - t0) / iters;

  /* phase 2: MPI_Pack all faces into one message, MPI_Unpack on arrival */
  int total = 0;
  for (int f = 0; f < 6; ++f) {
    int s;
    MPI_Pack_size(1, send_face[f], MPI_COMM_WORLD, &s);
    total += s;
  }
  char* out = malloc((size_t)total);
  char* in = malloc((size_t)total);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int it = 0; it < iters; ++it) {
    int pos = 0;
    for (int f = 0; f < 6; ++f) MPI_Pack(grid, 1, send_face[f], out, total, &pos, MPI_COMM_WORLD);
    MPI_Sendrecv(out, pos, MPI_PACKED, right, 99, in, total, MPI_PACKED, left, 99, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    pos = 0;
    for (int f = 0; f < 6; ++f) MPI_Unpack(in, total, &pos, grid, 1, recv_face[f ^ 1], MPI_COMM_WORLD);
  }
  double t_pack = (MPI_Wtime() - t0) / iters;

  uint64_t h = fnv1a((const unsigned char*)grid, sizeof(double) * (size_t)m * m * m, 1469598103934665603ull);
  uint64_t hs[64] = {0};
  MPI_Gather(&h, 1, MPI_UINT64_T, rank == 0 ? hs : NULL, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  double tmax[2], tl[2] = {t_sendrecv, t_pack};
  MPI_Reduce(tl, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    uint64_t all = 1469598103934665603ull;
    for (int i = 0; i < size && i < 64; ++i) all = fnv1a((const unsigned char*)&hs[i], 8, all);
    printf("grid %d^3 (+halo %d), %d ranks, 6 faces of %d x %d x %d doubles\n", n, r, size, n, n, r);
    printf("sendrecv_of_datatypes_us %.1f\n", tmax[0] * 1e6);
    printf("pack_sendrecv_unpack_us %.1f\n", tmax[1] * 1e6);
    printf("checksum %016llx\n", (unsigned long long)all);
  }
  for (int f = 0; f < 6; ++f) {
    MPI_Type_free(&send_face[f]);
    MPI_Type_free(&recv_face[f]);
  }
  free(grid);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
