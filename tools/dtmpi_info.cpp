// dtmpi-info: what dtmpi detects and decides on this machine.
//   dtmpi-info            MPI library, CUDA-awareness, GPUs, configuration
//   dtmpi-info --explain  the datatype engine's view of a catalog of types
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/config.hpp"
#include "runtime/system_info.hpp"
#include "type/ir.hpp"
#include "type/translate.hpp"
#include "type_catalog.hpp"
#include "transport/predict.hpp"
#include "transport/transfer.hpp"

namespace rt = dtmpi::runtime;

static void print_system() {
  std::printf("dtmpi %s\n", DTMPI_VERSION);
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

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc > 1 && std::strcmp(argv[1], "--explain") == 0)
    explain();
  else if (argc > 1)
    std::printf("usage: dtmpi-info [--explain]\n");
  else
    print_system();
  MPI_Finalize();
  return 0;
}
