// dtmpi-bench: benchmarks printed side by side with their baselines.
//   dtmpi-bench pack [--quick] [--filter S]   CPU MPI_Pack: system MPI vs dtmpi vs memcpy
//   dtmpi-bench pack --gpu [--quick] [--csv F] GPU MPI_Pack vs per-block/2D copies vs one copy
//   dtmpi-bench latency             8-byte ping-pong through dtmpi vs direct (2 ranks)
//   dtmpi-bench commit [--quick] [--filter S]  create+commit+free of darray/subarray/struct types:
//                                   system MPI_Type_commit vs dtmpi's (and with the first plan lookup)
//   dtmpi-bench halo [--gpu] [--size N] [--radius R] [--quantities Q] [--pitch B] [--iters K] [--csv F]
//                                   3D halo exchange (26 neighbours, subarray types): isend / alltoallv /
//                                   alltoallw variants, system MPI vs dtmpi vs the packed-bytes limit
//   dtmpi-bench placement [--quick]         3D stencil rank grids: inter-node weight before/after placement
//   dtmpi-bench model [--quick] [--csv F]     auto vs every forced method over >= 200 cases (2 ranks, GPU)
//   dtmpi-bench pingpong --gpu [--quick] [--csv F] [--filter S]  2D/3D objects on device buffers: each method, auto,
//                                   manual and per-block baselines, the limit (2 ranks)
#include <mpi.h>

#include <cstdio>
#include <cstring>

namespace dtmpi::bench {
int bench_pack(int argc, char** argv);
int bench_latency(int argc, char** argv);
int bench_commit(int argc, char** argv);
int bench_placement(int argc, char** argv);
int bench_halo(int argc, char** argv);
#ifdef DTMPI_BENCH_GPU
int bench_gpu_pack(int argc, char** argv);
int bench_gpu_pingpong(int argc, char** argv);
int bench_model(int argc, char** argv);
#endif
}  // namespace dtmpi::bench

static const char kUsage[] =
    "usage: dtmpi-bench SUBCOMMAND [options]\n"
    "  pack [--quick] [--filter S]            CPU MPI_Pack: system MPI vs dtmpi vs memcpy\n"
    "  pack --gpu [--quick] [--csv F]         GPU MPI_Pack vs per-block/2D copies vs one copy\n"
    "  latency                                8-byte ping-pong through dtmpi vs direct (2 ranks)\n"
    "  commit [--quick] [--filter S]          create+commit+free of darray/subarray/struct types:\n"
    "                                         system MPI_Type_commit vs dtmpi's (and with the first plan lookup)\n"
    "  halo [--gpu] [--size N] [--radius R] [--quantities Q] [--pitch B] [--iters K] [--csv F]\n"
    "                                         3D halo exchange: system MPI vs dtmpi vs the packed-bytes limit\n"
    "  placement [--quick]                    3D stencil rank grids: inter-node weight before/after placement\n"
    "  model [--quick] [--csv F]              auto vs every forced method (2 ranks, GPU)\n"
    "  pingpong --gpu [--quick] [--csv F] [--filter S]  2D/3D objects on device buffers (2 ranks)\n";

static bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 2;
  if (argc > 1 && std::strcmp(argv[1], "pack") == 0 && has_flag(argc, argv, "--gpu")) {
#ifdef DTMPI_BENCH_GPU
    rc = dtmpi::bench::bench_gpu_pack(argc - 1, argv + 1);
#else
    std::fprintf(stderr, "dtmpi-bench was built without CUDA\n");
#endif
  } else if (argc > 1 && std::strcmp(argv[1], "pingpong") == 0 && has_flag(argc, argv, "--gpu")) {
#ifdef DTMPI_BENCH_GPU
    rc = dtmpi::bench::bench_gpu_pingpong(argc - 1, argv + 1);
#else
    std::fprintf(stderr, "dtmpi-bench was built without CUDA\n");
#endif
  } else if (argc > 1 && std::strcmp(argv[1], "model") == 0) {
#ifdef DTMPI_BENCH_GPU
    rc = dtmpi::bench::bench_model(argc - 1, argv + 1);
#else
    std::fprintf(stderr, "dtmpi-bench was built without CUDA\n");
#endif
  } else if (argc > 1 && std::strcmp(argv[1], "pack") == 0)
    rc = dtmpi::bench::bench_pack(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "placement") == 0)
    rc = dtmpi::bench::bench_placement(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "halo") == 0)
    rc = dtmpi::bench::bench_halo(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "latency") == 0)
    rc = dtmpi::bench::bench_latency(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "commit") == 0)
    rc = dtmpi::bench::bench_commit(argc - 1, argv + 1);
  else if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    rc = 0;
  } else {
    std::fputs(kUsage, stderr);
  }
  MPI_Finalize();
  return rc;
}
