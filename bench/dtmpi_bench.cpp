// dtmpi-bench: benchmarks printed side by side with their baselines; the
// subcommands and their options are in kCommands below (dtmpi-bench --help).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "cli.hpp"

namespace dtmpi::bench {
int bench_pack(int argc, char** argv);
int bench_latency(int argc, char** argv);
int bench_placement(int argc, char** argv);
int bench_halo(int argc, char** argv);
int bench_rma(int argc, char** argv);
int bench_commit(int argc, char** argv);
int bench_coll(int argc, char** argv);
int bench_protocols(int argc, char** argv);
int bench_stencil(int argc, char** argv);
#ifdef DTMPI_BENCH_GPU
int bench_gpu_pack(int argc, char** argv);
int bench_gpu_pingpong(int argc, char** argv);
int bench_model(int argc, char** argv);
#endif
}  // namespace dtmpi::bench

namespace {

using dtmpi::tools::Option;
struct Command {
  const char* name;
  const char* launch;  // how to start it
  const char* what;
  std::vector<Option> options;
};

const Option kQuick{"--quick", nullptr, "fewer cases, shorter samples"};
const Option kCsv{"--csv", "F", "also write the rows to the CSV file F"};
const std::vector<Command> kCommands = {
    {"pack", "mpiexec -n 1 dtmpi-bench pack",
     "MPI_Pack of host memory: the system MPI's vs dtmpi's vs memcpy of the packed bytes; with --gpu, of device "
     "memory vs one copy per block, cudaMemcpy2D and one copy of the packed bytes",
     {{"--gpu", nullptr, "device memory (needs a CUDA build and a GPU)"},
      kQuick,
      {"--filter", "S", "only the cases whose name contains S (host memory)"},
      kCsv}},
    {"latency", "mpiexec -n 2 dtmpi-bench latency",
     "the interposer's added latency on 8-byte MPI_Send/MPI_Recv, and the system MPI's cost per call",
     {{"--fortran", nullptr, "also through the Fortran entry points (mpi_send_/mpi_recv_) vs the MPI's own binding"}}},
    {"pingpong", "mpiexec -n 2 dtmpi-bench pingpong --gpu",
     "2D/3D objects on device buffers between 2 ranks: each method, auto, manual and per-block baselines, the limit",
     {{"--gpu", nullptr, "required: the objects are in device memory"},
      kQuick,
      kCsv,
      {"--filter", "S", "only the cases whose name contains S"}}},
    {"model", "mpiexec -n 2 dtmpi-bench model",
     "does the performance model choose well: auto vs every forced method over >= 200 GPU cases (CUDA build, GPU)",
     {kQuick, kCsv}},
    {"rma", "mpiexec -n 2 dtmpi-bench rma --gpu",
     "one-sided put/get/accumulate (lock, op, unlock) on a window over GPU memory: dtmpi vs the manual host copy "
     "+ send/recv vs the device-to-device copy limit (CUDA build, GPU)",
     {{"--gpu", nullptr, "required: the window is in device memory"}, kQuick}},
    {"placement", "dtmpi-bench placement",
     "placement of 3D stencil rank grids (8-3072 ranks): inter-node halo weight before/after dtmpi's partition",
     {kQuick}},
    {"commit", "mpiexec -n 1 dtmpi-bench commit",
     "create + commit + free of darray, subarray and struct types: the system MPI's MPI_Type_commit vs dtmpi's "
     "(and with the first plan lookup, where dtmpi builds the plan)",
     {kQuick, {"--filter", "S", "only the cases whose name contains S"}}},
    {"coll", "mpiexec -n N dtmpi-bench coll",
     "Barrier, Bcast, Allreduce, Reduce, Allgather, Gather, Scatter, Alltoall, Reduce_scatter_block, Scan, Exscan, "
     "Allgatherv, Gatherv, Scatterv, Alltoallv, Reduce_scatter (rs) (8 B - 1 MiB per rank; the v forms and rs with "
     "equal counts): the system MPI vs each of dtmpi's algorithms (src/coll) and the tuned choice "
     "(dtmpi-tune's table under DTMPI_COLL=tuned, else the built-in one), side by side with ratios",
     {kQuick,
      {"--op", "S",
       "only this operation (barrier, bcast, allreduce, reduce, allgather, gather, scatter, alltoall, rsb, scan, "
       "exscan, allgatherv, gatherv, scatterv, alltoallv, rs)"},
      {"--in-place", nullptr,
       "the MPI_IN_PLACE forms, of the operations dtmpi-tune's table keys by it (allreduce, allgather, alltoall, "
       "rsb, allgatherv): every column in place, tuned = the table's in-place entries"}}},
    {"protocols", "mpiexec -n N dtmpi-bench protocols",
     "claims C3 and C4 of the Nishtala digest on dtmpi's node segment: a broadcast from rank 0 (8 B - 4 MiB, "
     "barrier-separated) by signaling put, eager (bounce + copy out), rendez-vous (announce, get, acknowledge), "
     "and the cached address (Single) vs one discovered per call (Local); every destination checked",
     {kQuick}},
    {"halo", "mpiexec -n N dtmpi-bench halo",
     "3D halo exchange (26 neighbours, subarray types): isend / alltoallv / alltoallw with the system MPI vs dtmpi "
     "vs the packed-bytes limit, every exchange validated",
     {{"--gpu", nullptr, "device memory (default block 256^3; host: 64^3)"},
      {"--size", "N", "block of N^3 cells per rank"},
      {"--radius", "R", "ghost shell radius (default 3)"},
      {"--quantities", "Q", "arrays per block (default 8)"},
      {"--pitch", "B", "row pitch in bytes (default 512)"},
      {"--iters", "K", "rounds of all variants; the median is reported (default 5)"},
      kCsv,
      {"--only", "S", "only the variants whose name contains S (and the limits)"},
      {"--no-limits", nullptr, "the limits only where --only names them"}}},
    {"stencil", "mpiexec -n N dtmpi-bench stencil",
     "the exchange of a dtmpi::stencil domain (periodic, 26 directions) per iteration, checked once, vs the "
     "packed-bytes limit (its halo bytes in one contiguous memcpy / cudaMemcpy device to device) as a ratio, and "
     "the plain-MPI halo of the same block (dtmpi-bench halo --only isend, in this run where comparable); host "
     "domains by shared memory and by messages, each with its overlap of exchange and interior compute",
     {{"--gpu", nullptr, "device memory (needs a CUDA build and a GPU; exits 77 without one)"},
      {"--extent", "N", "N^3 points per subdomain (default 256 with --gpu, else 32)"},
      {"--radius", "R", "ghost width on every side (default 3)"},
      {"--axes", "A", "the axes the radius applies to, a subset of xyz (default xyz; x: only the two x faces "
                      "travel, to time one access pattern; no plain-MPI halo then)"},
      {"--quantities", "Q", "quantities (default 8)"},
      {"--elem", "B", "bytes per element: 1, 2, 4, 8 or 16 (default 8)"},
      {"--per-rank", "P", "subdomains per rank (default 1)"},
      {"--gpus", "G", "device domains: G GPUs per rank (set_gpus; rank r's slot k on GPU (r G + k mod G) mod the "
                      "device count; default 1: the node-local rank's GPU)"},
      {"--iters", "K", "exchanges per sample (default 20)"},
      {"--samples", "S", "samples; the median of the slowest rank is reported (default 5)"},
      {"--path", "WHICH", "device domains: auto, staged or device (PeerPath; default auto)"},
      {"--graphs", "G", "device domains: on, off or both (CUDA graphs for the pack/copy/unpack launches; default: "
                        "DTMPI_STENCIL_GRAPHS)"},
      {"--shm", "S", "host domains: on, off or both (the node's peers through shared memory or by MPI messages; "
                     "default both)"},
      {"--no-overlap", nullptr, "host domains: skip the overlap rows (interior compute alone, exchange alone, "
                                "start + compute + finish, the share of the exchange hidden)"},
      {"--progress", "P", "overlap rows: progress() after every P planes of the interior compute (default 1; 0: never)"},
      {"--no-placement", nullptr, "keep the partition's order inside a node (set_placement(false))"},
      {"--no-halo", nullptr, "do not run the plain-MPI halo; print its command only"}}},
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: dtmpi-bench SUBCOMMAND [options]\n"
               "\n"
               "Benchmarks of dtmpi side by side with their baselines (the system MPI through PMPI_*, the\n"
               "limit of the packed bytes alone) in one run; results and how they were taken: bench/results/.\n"
               "\n"
               "subcommands:\n");
  for (const auto& c : kCommands) {
    std::fprintf(f, "\n  %-10s %s%s\n", c.name, c.launch, c.options.empty() ? "" : " [options]");
    dtmpi::tools::print_options(f, {{"", nullptr, c.what}});
    dtmpi::tools::print_options(f, c.options, 6);
  }
  std::fprintf(f, "\nExamples: mpiexec -n 2 dtmpi-bench halo --size 32 --iters 5\n"
               "          mpiexec -n 2 dtmpi-bench stencil --gpu --extent 256 --radius 3 --quantities 8\n");
}

// Rejects what no subcommand takes before MPI_Init (so --help and typos never
// start a benchmark); -1: run. A subcommand not in kCommands is left to the
// dispatch below, which reports it.
int check_command_line(int argc, char** argv) {
  if (argc < 2 || dtmpi::tools::is_help(argv[1])) {
    if (dtmpi::tools::launcher_rank() == 0) usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    dtmpi::tools::Args args;
    const std::string program = std::string("dtmpi-bench ") + c.name;
    const int rc = dtmpi::tools::parse(program.c_str(), argc, argv, 2, c.options, usage, args);
    if (rc < 0 && std::strcmp(c.name, "pingpong") == 0 && !args.has("--gpu")) {
      if (dtmpi::tools::launcher_rank() == 0)
        std::fprintf(stderr, "dtmpi-bench pingpong: measures device buffers: add --gpu\n");
      return 2;
    }
    return rc;
  }
  return -1;
}

}  // namespace

static bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

int main(int argc, char** argv) {
  if (int rc = check_command_line(argc, argv); rc >= 0) return rc;
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
  } else if (argc > 1 && std::strcmp(argv[1], "rma") == 0) {
#ifdef DTMPI_BENCH_GPU
    rc = dtmpi::bench::bench_rma(argc - 1, argv + 1);
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
  else if (argc > 1 && std::strcmp(argv[1], "coll") == 0)
    rc = dtmpi::bench::bench_coll(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "protocols") == 0)
    rc = dtmpi::bench::bench_protocols(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "stencil") == 0)
    rc = dtmpi::bench::bench_stencil(argc - 1, argv + 1);
  else if (argc > 1 && std::strcmp(argv[1], "commit") == 0)
    rc = dtmpi::bench::bench_commit(argc - 1, argv + 1);
  else if (dtmpi::tools::launcher_rank() == 0)
    std::fprintf(stderr, "dtmpi-bench: unknown subcommand '%s'\nRun 'dtmpi-bench --help' for the subcommands.\n",
                 argv[1]);
  MPI_Finalize();
  return rc;
}
