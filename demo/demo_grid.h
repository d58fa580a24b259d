/* The block of dtmpi-demo and its halo exchange: faces as subarray datatypes,
 * the block in host memory or (DEMO_GPU) in GPU memory. */
#ifndef DTMPI_DEMO_GRID_H
#define DTMPI_DEMO_GRID_H
#include <mpi.h>
#include <stdint.h>

enum { kRadius = 3 };

typedef struct {
  int n, m;            /* interior edge, edge with the ghost shell (n + 2 * kRadius) */
  int rank, left, right;
  int on_gpu;
  double* data;        /* the block: host memory, or device memory with DEMO_GPU */
  double* host;        /* DEMO_GPU: the host copy used to set up and to check */
  char *out, *in;      /* the pack case's buffers, where the block is */
  int packed_total;
  MPI_Datatype send_face[6], recv_face[6]; /* face f = 2 * axis + side */
} Grid;

/* 0: ready; 1: out of memory; 2 (DEMO_GPU): no usable GPU. */
int grid_init(Grid* g, int n, int rank, int size);
void grid_free(Grid* g);
/* Sets every halo cell to -1, so a face that does not arrive is seen. */
void grid_poison_halo(Grid* g);
/* One exchange of case c: 0 sendrecv, 1 pack, 2 zfaces, 3 (DEMO_GPU) hoststaged:
 * the block copied to the host, exchanged there, copied back (what a program
 * does for a system MPI that cannot take device memory). */
void grid_exchange(Grid* g, int c);
/* Counts the halo cells of case c's faces that do not hold what the left
 * neighbour sent, and hashes them into *hash. */
int grid_check(Grid* g, int c, uint64_t* hash);

#endif
