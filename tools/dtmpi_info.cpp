// dtmpi-info: what dtmpi detects and decides on this machine.
//   dtmpi-info            MPI library, CUDA-awareness, GPUs, configuration
//   dtmpi-info --explain  the datatype engine's view of a catalog of types
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "runtime/config.hpp"
#include "runtime/system_info.hpp"
#include "type/ir.hpp"
#include "type/translate.hpp"
#include "type_catalog.hpp"

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
    std::printf("  %-16s = %-6s %s\n", v.name, set ? set : v.default_value, set ? "(set)" : "(default)");
  }
  for (const auto& name : rt::unknown_variables())
    std::printf("  %s is set but unknown to dtmpi\n", name.c_str());
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
