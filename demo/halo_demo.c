/* dtmpi-demo: an unmodified MPI program (it knows nothing of dtmpi; linked to
 * MPI only) whose ranks, in a ring, exchange the halo faces of a 3D block of
 * doubles described by subarray datatypes. scripts/run-demo.sh runs it on the
 * plain system MPI and with libdtmpi preloaded and compares the two.
 *
 * Cases (each: warm-up exchanges, then samples of several exchanges; every
 * sample's time is the slowest rank's):
 *   sendrecv   the 6 faces, one MPI_Sendrecv of the datatypes each
 *   pack       MPI_Pack of the 6 faces, one MPI_Sendrecv of the packed bytes, MPI_Unpack
 *   zfaces     the 2 faces across the fastest axis alone: 24-byte blocks (3 doubles
 *              a row), the small-block layout the system MPIs handle slowest
 * After each case every halo cell is checked against the value its neighbour
 * sent (halos are poisoned before), and a checksum of the received bytes is
 * printed so runs with and without dtmpi can be compared.
 *
 * Built a second time as dtmpi-demo-gpu (DEMO_GPU): the block lives in GPU
 * memory (cudaMalloc) and the device pointers go straight to MPI, which a
 * system MPI that is not CUDA-aware cannot take; its fourth case, hoststaged,
 * is what a program must do then: the block copied to the host and back
 * around the host exchange of the same faces.
 *
 * Output, one record a line (rank 0): "sample CASE US", "verify CASE ok|FAIL",
 * "checksum CASE HEX", "#" comments. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "demo_grid.h"

static void usage(FILE* f, const char* prog) {
  fprintf(f,
          "usage: %s [--size N] [--samples S] [--iters K] [--warmup W] [--case NAME] [--help]\n"
          "\n"
          "Halo exchange of a 3D block of N^3 doubles (+ a ghost shell of 3) between ranks in a ring,\n"
          "as an ordinary MPI program: faces as subarray datatypes through MPI_Sendrecv (case sendrecv),\n"
          "through MPI_Pack/MPI_Unpack (pack), and the small-block faces alone (zfaces). Prints every\n"
          "sample (the slowest rank's time per exchange), whether every halo cell arrived right, and a\n"
          "checksum of the received bytes.%s\n"
          "Compare the system MPI with dtmpi: scripts/run-demo.sh (or scripts/demo.sh).\n"
          "\n"
          "options:\n"
          "  --size N      block edge (default 96)\n"
          "  --samples S   timed samples per case (default 11)\n"
          "  --iters K     exchanges per sample (default 8)\n"
          "  --warmup W    untimed exchanges before the samples (default 3)\n"
          "  --case NAME   only this case: %s\n"
          "  --help        this help\n",
          prog,
#ifdef DEMO_GPU
          "\nThis build keeps the block in GPU memory and hands device pointers to MPI; case hoststaged\n"
          "copies the block to the host and back around a host exchange instead.",
          "sendrecv, pack, zfaces or hoststaged"
#else
          "", "sendrecv, pack or zfaces"
#endif
  );
}

/* This process's rank as its launcher announced it: only rank 0 prints the
 * usage or an error, which happen before MPI_Init. */
static int launcher_rank(void) {
  const char* vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
  for (int i = 0; i < 4; ++i) {
    const char* s = getenv(vars[i]);
    if (s && *s) return atoi(s);
  }
  return 0;
}

/* A whole number in [min, 100000] (--warmup may be 0, the others not). */
static int whole(const char* s, int min, int* out) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < min || v > 100000) return 0;
  *out = (int)v;
  return 1;
}

static const char* const kCases[] = {"sendrecv", "pack", "zfaces", "hoststaged"};
#ifdef DEMO_GPU
enum { kNumCases = 4 };
#else
enum { kNumCases = 3 };
#endif

static int case_index(const char* name) {
  for (int c = 0; c < kNumCases; ++c)
    if (!strcmp(name, kCases[c])) return c;
  return -1;
}

typedef struct {
  int n, samples, iters, warmup;
  const char* only;
} Options;

/* Returns -1 to run, else the exit code (0 after --help, 2 after a mistake). */
static int parse(int argc, char** argv, Options* o) {
  const char* prog = "dtmpi-demo";
#ifdef DEMO_GPU
  prog = "dtmpi-demo-gpu";
#endif
  const int speak = launcher_rank() == 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    int* target = NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (speak) usage(stdout, prog);
      return 0;
    }
    if (!strcmp(a, "--size")) target = &o->n;
    else if (!strcmp(a, "--samples")) target = &o->samples;
    else if (!strcmp(a, "--iters")) target = &o->iters;
    else if (!strcmp(a, "--warmup")) target = &o->warmup;
    else if (!strcmp(a, "--case") && i + 1 < argc && case_index(argv[i + 1]) >= 0) {
      o->only = argv[++i];
      continue;
    }
    if (!target || i + 1 >= argc || !whole(argv[i + 1], target == &o->warmup ? 0 : 1, target)) {
      if (speak)
        fprintf(stderr, "%s: %s '%s'\nRun '%s --help' for the usage.\n", prog,
                target || !strcmp(a, "--case") ? "bad or missing value for" : "unknown option", a, prog);
      return 2;
    }
    ++i;
  }
  return -1;
}

int main(int argc, char** argv) {
  Options o = {96, 11, 8, 3, NULL};
  const int rc = parse(argc, argv, &o);
  if (rc >= 0) return rc;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Grid g;
  const int ready = grid_init(&g, o.n, rank, size);
  int ready_everywhere = 0;
  MPI_Allreduce(&ready, &ready_everywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (ready_everywhere == 2) { /* DEMO_GPU without a GPU: skipped, not failed */
    if (rank == 0) printf("# skipped: no GPU visible to this process (cudaGetDeviceCount)\n");
    MPI_Finalize();
    return 77;
  }
  if (ready_everywhere != 0) {
    if (rank == 0) fprintf(stderr, "dtmpi-demo: cannot allocate the block\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n,")] = 0;
    printf("# mpi %s\n", version);
    printf("# grid %d^3 (+halo %d) doubles, %d ranks in a ring, %s memory; %d samples of %d exchanges after %d\n",
           o.n, kRadius, size, g.on_gpu ? "GPU" : "host", o.samples, o.iters, o.warmup);
    fflush(stdout);
  }
  const char* const* cases = kCases;
  int failed = 0;
  for (int c = 0; c < kNumCases; ++c) {
    if (o.only && strcmp(o.only, cases[c])) continue;
    grid_poison_halo(&g);
    for (int w = 0; w < o.warmup; ++w) grid_exchange(&g, c);
    double* samples = malloc(sizeof(double) * (size_t)o.samples);
    for (int s = 0; s < o.samples; ++s) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int k = 0; k < o.iters; ++k) grid_exchange(&g, c);
      double t = (MPI_Wtime() - t0) / o.iters, slowest = 0;
      MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      samples[s] = slowest;
    }
    uint64_t mine = 0, sum = 1469598103934665603ull;
    const int bad = grid_check(&g, c, &mine);
    int bad_anywhere = 0;
    MPI_Reduce(&bad, &bad_anywhere, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    uint64_t* all = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)size) : NULL;
    MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      for (int r = 0; r < size; ++r) sum = (sum ^ all[r]) * 1099511628211ull;
      free(all);
      for (int s = 0; s < o.samples; ++s) printf("sample %s %.1f\n", cases[c], samples[s] * 1e6);
      printf("verify %s %s\n", cases[c], bad_anywhere ? "FAIL" : "ok");
      if (bad_anywhere) printf("# %s: %d halo cells wrong\n", cases[c], bad_anywhere);
      printf("checksum %s %016llx\n", cases[c], (unsigned long long)sum);
      fflush(stdout);
    }
    failed |= bad_anywhere != 0;
    free(samples);
  }
  grid_free(&g);
  MPI_Finalize();
  return failed ? 1 : 0;
}
