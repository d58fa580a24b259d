// dtmpi-info: what dtmpi detects and decides on this machine (usage: below,
// or dtmpi-info --help).
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"

#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/mapped_host.hpp"
#include "runtime/system_info.hpp"
#include "type/ir.hpp"
#include "type/translate.hpp"
#include "type_catalog.hpp"
#include "transport/predict.hpp"
#include "transport/transfer.hpp"

namespace rt = dtmpi::runtime;

static void print_system() {
  std::printf("dtmpi %s\n", DTMPI_VERSION);
  std::printf("built against    : %s (%s); programs of another MPI need that MPI's build of dtmpi\n",
              DTMPI_MPI_FLAVOUR, DTMPI_MPI_BUILT_VERSION);
  std::printf("MPI library      : %s\n", rt::mpi_library_version().c_str());
  const auto aware = rt::mpi_cuda_aware();
  std::printf("MPI CUDA-aware   : %s\n", aware == rt::CudaAware::kYes  ? "yes"
                                         : aware == rt::CudaAware::kNo ? "no"
                                                                       : "unknown (no MPIX_Query_cuda_support)");
  const auto gpus = rt::query_gpus();
  std::printf("built with CUDA  : %s\n", gpus.built_with_cuda ? "yes" : "no");
  std::printf("GPUs seen        : %d%s%s\n", gpus.count, gpus.note.empty() ? "" : "  (",
              gpus.note.empty() ? "" : (gpus.note + ")").c_str());
  for (size_t i = 0; i < gpus.names.size(); ++i) std::printf("  GPU %zu: %s\n", i, gpus.names[i].c_str());
  std::printf("configuration    :\n");
  for (const auto& v : rt::kVariables) {
    const char* set = std::getenv(v.name);
    std::printf("  %-28s = %-8s %s\n", v.name, set ? set : v.default_value, set ? "(set)" : "(default)");
  }
  for (const auto& name : rt::unknown_variables())
    std::printf("  %s is set but unknown to dtmpi\n", name.c_str());
  for (const auto& problem : rt::invalid_values()) std::printf("  %s\n", problem.c_str());
  // what the interposer does with which buffers (docs/point-to-point.md, docs/collectives.md)
  const auto& c = rt::config();
  const bool gpu_here = rt::gpu_enabled();
  const std::string host_rule = "non-contiguous with blocks <= " +
                                std::to_string(c.host_staging_max_block) +
                                " B (up to " + std::to_string(dtmpi::transport::kHostPackMaxBytes >> 20) +
                                " MiB a buffer) packed by dtmpi (p2p and collectives); others to the system MPI as they are";
  std::printf("decisions        :\n");
  std::printf("  host datatypes : %s\n",
              c.host_staging ? host_rule.c_str() : "all to the system MPI as they are (DTMPI_HOST_STAGING=0)");
  if (c.host_staging)
    std::printf("  host receives  : %s\n", rt::host_receive_direct()
                                              ? "direct: the system MPI unpacks the packed bytes with the receiver's type"
                                              : "staged: the packed bytes land in a buffer, dtmpi unpacks them");
  const bool aware_mpi = aware == rt::CudaAware::kYes || c.cuda_aware == "1";
  std::printf("  GPU buffers    : %s\n",
              !gpu_here   ? "none usable in this process"
              : aware_mpi ? "contiguous ones to the CUDA-aware system MPI, others packed on the GPU and handed over"
                          : "through dtmpi's transport (method per message: DTMPI_METHOD / the performance model)");
  std::printf("  collectives    : %s\n",
              gpu_here && !aware_mpi
                  ? "blocking Alltoallv/w, neighborhood all-to-all and allgather point to point through dtmpi (GPU to GPU); "
                    "other forms staged through host memory with batched packing"
                  : "staged (batched packing) only where a side needs it; everything else to the system MPI");
  if (gpu_here) {
    // what MPI_Init does (runtime::before_mpi_init, called by main before it)
    const rt::MappingWatch w = rt::mapping_watch();
    const std::string maps =
        w.on ? "proven host by the kernel's mapping records (" + std::to_string(w.rings) + " per-CPU rings, " +
                   std::to_string(w.events) + " perf events)"
             : "asked of the driver on each call: " + w.why_off;
    std::printf("  mmap'd host    : %s\n", maps.c_str());
  }
  std::printf("  GPU ordering   : %s\n", c.gpu_order_legacy
                                             ? "waits for the legacy default stream (safe after a pageable cudaMemcpy)"
                                             : "dtmpi's own streams only (DTMPI_GPU_ORDER=stream)");
  if (gpu_here)
    std::printf("  GPU MPI_Pack   : %s\n",
                c.pack_async && c.gpu_order_legacy && !aware_mpi
                    ? "device to device on one GPU: returns once queued on the legacy stream (DTMPI_PACK_ASYNC=1)"
                    : "returns when the bytes are there");
  // the performance model MPI_Init would load, and what it decides
  const std::string gpu = rt::gpu_enabled() && !gpus.names.empty() ? gpus.names[0] : "";
  const std::string path = dtmpi::transport::load_model(1, gpu);
  const auto& m = dtmpi::transport::current_model();
  std::printf("performance model: %s\n", m.defaults ? ("built-in defaults (no usable " + path + ")").c_str()
                                                     : (path + " (" + (m.gpu.empty() ? "host terms" : m.gpu) +
                                                        (m.quick ? ", quick" : "") + ")").c_str());
  if (!gpu.empty()) {
    std::printf("  auto choices (2D, blocks 64 B, pitch 128 B):");
    for (int64_t bytes : {int64_t{1} << 10, int64_t{1} << 16, int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 26}) {
      dtmpi::transport::Shape s;
      s.bytes = bytes;
      s.block = 64;
      s.pitch = 128;
      s.multi = bytes >= dtmpi::transport::kMultiMin;
      s.ipc = s.multi;
      std::printf(" %lld KiB:%s/%s", static_cast<long long>(bytes >> 10),
                  dtmpi::transport::method_name(dtmpi::transport::predict(m, s, rt::config().pipeline_chunk).best),
                  dtmpi::transport::method_name(
                      dtmpi::transport::predict(m, [&] { auto t = s; t.ipc = false; return t; }(), rt::config().pipeline_chunk).best));
    }
    std::printf("  (with/without an IPC peer)\n");
  }
}

static void explain() {
  auto catalog = dtmpi::tools::make_catalog();
  for (const auto& e : catalog) {
    std::printf("== %s\n", e.name.c_str());
    auto b = dtmpi::type::build_plan(e.type);
    if (!b) {
      std::printf("   no plan (%s): the system MPI handles this type\n\n", b.error().what.c_str());
      continue;
    }
    std::printf("-- IR from MPI:\n%s", dtmpi::type::to_string(b.value().raw).c_str());
    std::printf("-- canonical:\n%s", dtmpi::type::to_string(b.value().canonical).c_str());
    std::printf("-- plan: %s\n\n", dtmpi::type::describe(b.value().plan).c_str());
  }
  dtmpi::tools::free_catalog(catalog);
}

// The libdtmpi of this build: beside the tool in the build tree, or where
// `cmake --install` put it relative to the installed tool.
static std::string library_path() {
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string(".");
  dir.resize(dir.rfind('/'));
  for (const std::string& candidate : {dir + "/" DTMPI_LIB_FROM_INSTALLED_TOOLS "/" DTMPI_LIB_NAME,
                                       std::string(DTMPI_LIB_BUILD_PATH)}) {
    // absolute, the name itself kept (libdtmpi-<mpi>.so, not the versioned file it links to)
    const size_t slash = candidate.rfind('/');
    char real[PATH_MAX];
    if (access(candidate.c_str(), R_OK) == 0 && realpath(candidate.substr(0, slash).c_str(), real))
      return std::string(real) + candidate.substr(slash);
  }
  return "";
}

static const std::vector<dtmpi::tools::Option> kOptions = {
    {"--explain", nullptr,
     "the datatype engine's view of a catalog of example types: the IR from MPI, after canonicalization, and the "
     "plan"},
    {"--preload", nullptr,
     "print the LD_PRELOAD=... setting that loads this build's libdtmpi (for programs built with the same MPI) "
     "and exit"},
    {"--help", nullptr, "this help"}};

static void usage(FILE* f) {
  std::fprintf(f,
               "usage: dtmpi-info [--explain | --preload | --help]\n"
               "\n"
               "What dtmpi detects and decides on this machine: the MPI library (this build: %s),\n"
               "whether it is CUDA-aware, the GPUs, every DTMPI_* variable in force (docs/configuration.md),\n"
               "what dtmpi does with host and GPU buffers, and the performance model MPI_Init would load.\n"
               "Runs as one process (no mpiexec needed).\n"
               "\n"
               "options:\n",
               DTMPI_MPI_FLAVOUR);
  dtmpi::tools::print_options(f, kOptions);
  std::fprintf(f,
               "\n"
               "Next: dtmpirun mpiexec -n 4 ./app   (preloads the libdtmpi that matches the program's MPI)\n"
               "      mpiexec -n 2 dtmpi-measure    (measures this machine for the performance model, once)\n");
}

int main(int argc, char** argv) {
  dtmpi::tools::Args args;
  const int rc = dtmpi::tools::parse("dtmpi-info", argc, argv, 1, kOptions, usage, args);
  if (rc >= 0) return rc;
  if (args.has("--explain") && args.has("--preload")) {
    std::fprintf(stderr, "dtmpi-info: --explain and --preload do not go together\nRun 'dtmpi-info --help' for the usage.\n");
    return 2;
  }
  if (args.has("--preload")) {
    // no MPI_Init: this only names a file
    const std::string lib = library_path();
    if (lib.empty()) {
      std::fprintf(stderr, "dtmpi-info: %s not found beside this tool (build or install dtmpi first)\n",
                   DTMPI_LIB_NAME);
      return 1;
    }
    std::printf("LD_PRELOAD=%s\n", lib.c_str());
    return 0;
  }
  // as dtmpi's MPI_Init does first (the mapping watch); in a program libdtmpi's
  // mremap is the process's where dtmpi is preloaded or linked first (as
  // dtmpirun runs it): this tool reports what the kernel and limits allow
  rt::set_mremap_seen(true);
  rt::before_mpi_init();
  MPI_Init(&argc, &argv);
  if (args.has("--explain"))
    explain();
  else
    print_system();
  MPI_Finalize();
  return 0;
}
