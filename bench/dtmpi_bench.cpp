// dtmpi-bench: benchmarks printed side by side with their baselines.
//   dtmpi-bench pack [--quick]      CPU MPI_Pack: system MPI vs dtmpi vs memcpy
//   dtmpi-bench latency             8-byte ping-pong through dtmpi vs direct (2 ranks)
#include <mpi.h>

#include <cstdio>
#include <cstring>

namespace dtmpi::bench {
int bench_pack(int argc, char** argv);
int bench_latency(int argc, char** argv);
}  // namespace dtmpi::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 2;
  if (argc > 1 && std::strcmp(argv[1], "pack") == 0)
    rc = dtmpi::bench::bench_pack(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "latency") == 0)
    rc = dtmpi::bench::bench_latency(argc - 1, argv + 1);
  else
    std::fprintf(stderr, "usage: dtmpi-bench pack [--quick] | latency\n");
  MPI_Finalize();
  return rc;
}
