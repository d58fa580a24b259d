/* The block of dtmpi-demo and its halo exchange (demo_grid.h). Only standard
 * MPI calls: the program must stay one that knows nothing of dtmpi. */
#include "demo_grid.h"

#include <stdlib.h>
#include <string.h>
#ifdef DEMO_GPU
#include <cuda_runtime.h>
#endif

/* A cell's value on rank q: unique per rank and cell, exact in a double. */
static double value(int q, size_t index) { return (double)q * 1e7 + (double)index; }

/* The start of face f's send region (the interior slab next to the halo) or
 * receive region (the halo itself) along each axis, and its extent. */
static void face_box(const Grid* g, int f, int send, int start[3], int sub[3]) {
  const int axis = f / 2, side = f % 2, r = kRadius, n = g->n;
  for (int d = 0; d < 3; ++d) {
    sub[d] = n;
    start[d] = r;
  }
  sub[axis] = r;
  start[axis] = send ? (side == 0 ? r : n) : (side == 0 ? 0 : n + r);
}

static size_t bytes_of(const Grid* g) { return sizeof(double) * (size_t)g->m * g->m * g->m; }

int grid_init(Grid* g, int n, int rank, int size) {
  memset(g, 0, sizeof *g);
  g->n = n;
  g->m = n + 2 * kRadius;
  g->rank = rank;
  g->right = (rank + 1) % size;
  g->left = (rank + size - 1) % size;
  const size_t cells = (size_t)g->m * g->m * g->m;
  double* host = malloc(bytes_of(g));
  if (!host) return 1;
  for (size_t i = 0; i < cells; ++i) host[i] = value(rank, i);
  int sizes[3] = {g->m, g->m, g->m};
  for (int f = 0; f < 6; ++f) {
    int start[3], sub[3];
    face_box(g, f, 1, start, sub);
    MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &g->send_face[f]);
    face_box(g, f, 0, start, sub);
    MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &g->recv_face[f]);
    MPI_Type_commit(&g->send_face[f]);
    MPI_Type_commit(&g->recv_face[f]);
    int s = 0;
    MPI_Pack_size(1, g->send_face[f], MPI_COMM_WORLD, &s);
    g->packed_total += s;
  }
#ifdef DEMO_GPU
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    free(host);
    return 2;
  }
  cudaSetDevice(rank % devices);
  g->on_gpu = 1;
  g->host = host;
  if (cudaMalloc((void**)&g->data, bytes_of(g)) != cudaSuccess ||
      cudaMalloc((void**)&g->out, (size_t)g->packed_total) != cudaSuccess ||
      cudaMalloc((void**)&g->in, (size_t)g->packed_total) != cudaSuccess)
    return 1;
  cudaMemcpy(g->data, host, bytes_of(g), cudaMemcpyHostToDevice);
#else
  g->data = host;
  g->out = malloc((size_t)g->packed_total);
  g->in = malloc((size_t)g->packed_total);
  if (!g->out || !g->in) return 1;
  /* touch the pack buffers now: page faults are not what the samples measure */
  memset(g->out, 0, (size_t)g->packed_total);
  memset(g->in, 0, (size_t)g->packed_total);
#endif
  return 0;
}

void grid_free(Grid* g) {
  for (int f = 0; f < 6; ++f) {
    MPI_Type_free(&g->send_face[f]);
    MPI_Type_free(&g->recv_face[f]);
  }
#ifdef DEMO_GPU
  cudaFree(g->data);
  cudaFree(g->out);
  cudaFree(g->in);
  free(g->host);
#else
  free(g->data);
  free(g->out);
  free(g->in);
#endif
}

/* Host copy of the block: the block itself, or its mirror (DEMO_GPU). */
static double* host_view(Grid* g) { return g->on_gpu ? g->host : g->data; }

static void for_face(Grid* g, int f, int send, double* cells, double v, int* bad, uint64_t* hash, int peer) {
  int start[3], sub[3], src[3], ssub[3];
  face_box(g, f, send, start, sub);
  face_box(g, f ^ 1, 1, src, ssub); /* what the left neighbour sent into this halo */
  const size_t m = (size_t)g->m;
  for (int i = 0; i < sub[0]; ++i)
    for (int j = 0; j < sub[1]; ++j)
      for (int k = 0; k < sub[2]; ++k) {
        double* cell = &cells[((start[0] + i) * m + start[1] + j) * m + start[2] + k];
        if (!bad) {
          *cell = v;
          continue;
        }
        const size_t from = ((src[0] + i) * m + src[1] + j) * m + src[2] + k;
        *bad += *cell != value(peer, from);
        const unsigned char* b = (const unsigned char*)cell;
        for (size_t x = 0; x < sizeof *cell; ++x) *hash = (*hash ^ b[x]) * 1099511628211ull;
      }
}

void grid_poison_halo(Grid* g) {
  double* cells = host_view(g);
  for (int f = 0; f < 6; ++f) for_face(g, f, 0, cells, -1.0, NULL, NULL, 0);
#ifdef DEMO_GPU
  cudaMemcpy(g->data, g->host, bytes_of(g), cudaMemcpyHostToDevice);
#endif
}

void grid_exchange(Grid* g, int c) {
#ifdef DEMO_GPU
  if (c == 3) {
    cudaMemcpy(g->host, g->data, bytes_of(g), cudaMemcpyDeviceToHost);
    for (int f = 0; f < 6; ++f)
      MPI_Sendrecv(g->host, 1, g->send_face[f], g->right, f, g->host, 1, g->recv_face[f ^ 1], g->left, f,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cudaMemcpy(g->data, g->host, bytes_of(g), cudaMemcpyHostToDevice);
    return;
  }
#endif
  if (c == 1) {
    int pos = 0;
    for (int f = 0; f < 6; ++f) MPI_Pack(g->data, 1, g->send_face[f], g->out, g->packed_total, &pos, MPI_COMM_WORLD);
    MPI_Sendrecv(g->out, pos, MPI_PACKED, g->right, 99, g->in, g->packed_total, MPI_PACKED, g->left, 99,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    pos = 0;
    for (int f = 0; f < 6; ++f)
      MPI_Unpack(g->in, g->packed_total, &pos, g->data, 1, g->recv_face[f ^ 1], MPI_COMM_WORLD);
    return;
  }
  /* the face sent right is received, from the left, into the opposite halo */
  for (int f = c == 2 ? 4 : 0; f < 6; ++f)
    MPI_Sendrecv(g->data, 1, g->send_face[f], g->right, f, g->data, 1, g->recv_face[f ^ 1], g->left, f,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int grid_check(Grid* g, int c, uint64_t* hash) {
#ifdef DEMO_GPU
  cudaMemcpy(g->host, g->data, bytes_of(g), cudaMemcpyDeviceToHost);
#endif
  int bad = 0;
  *hash = 1469598103934665603ull;
  for (int f = c == 2 ? 4 : 0; f < 6; ++f) for_face(g, f ^ 1, 0, host_view(g), 0, &bad, hash, g->left);
  return bad;
}
