#include "runtime/lifecycle.hpp"

#include <mpi.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "base/footprint.hpp"
#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/mapped_host.hpp"
#include "runtime/stats.hpp"
#include "type/registry.hpp"

namespace dtmpi::runtime {

namespace {
std::atomic<bool> g_initialized{false};  // read by other threads' libraries (dtmpi_initialized())
}  // namespace

bool active() { return !config().disable; }

void before_mpi_init() {
  // Before the system MPI and the CUDA driver start their threads: one perf
  // event per CPU then covers the process (runtime/mapped_host.hpp). Only
  // where an NVIDIA driver is present: elsewhere no buffer is ever asked of
  // a driver, and the events would only cost file descriptors.
  const Config& c = config();
  if (c.host_maps == "off" || c.cuda == "off" || access("/dev/nvidiactl", F_OK) != 0) return;
  if (!start_mapping_watch())
    DTMPI_LOG(kDebug, "mmap'd host buffers are asked of the driver: %s", mapping_watch().why_off.c_str());
}
bool initialized() { return g_initialized.load(std::memory_order_acquire); }

void on_mpi_initialized() {
  int rank = 0;
  REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &rank);
  log::set_rank(rank);
  trace::dump_on_signal(rank);
  if (rank == 0) {
    for (const auto& name : unknown_variables())
      DTMPI_LOG(kWarn, "unknown variable %s ignored (see docs/configuration.md)", name.c_str());
    for (const auto& problem : invalid_values())
      DTMPI_LOG(kWarn, "%s (see docs/configuration.md)", problem.c_str());
  }
  // the host test mode stages every derived type, one run of bytes included
  type::set_derived_runs_direct(!test_hooks().stage_host);
  DTMPI_LOG(kInfo, "dtmpi active");
  g_initialized.store(true, std::memory_order_release);
}

void on_mpi_finalizing() {
  g_initialized.store(false, std::memory_order_release);
  if (trace::g_enabled.load()) {
    int rank = 0;
    REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &rank);
    trace::dump(rank);
  }
  if (config().stats) {
    int rank = 0;
    REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "[dtmpi stats rank %d] %s\n", rank, format_stats().c_str());
    if (gpu_enabled()) std::fprintf(stderr, "[dtmpi stats rank %d] pools: %s\n", rank, gpu_pool_stats().c_str());
    std::fprintf(stderr, "[dtmpi stats rank %d] memory: %s\n", rank, footprint::describe().c_str());
  }
  type::forget_all_plans();
  release_gpu_resources();
}

}  // namespace dtmpi::runtime
