// dtmpi-scope: the transfer measurement suite (Comm|Scope, Pearson's thesis
// chapter 3) on Google Benchmark. What every part of the tool shares: the
// options, what the machine has, how a row is registered and named.
//
// Rows are named FAMILY/DIRECTION/PLACE[/bytes:N][/manual_time]:
//   pinned/h2d/gpu0/bytes:1048576/manual_time    one explicit copy, CUDA events
//   naive/pinned/h2d/gpu0/bytes:1048576/real_time  the same by cudaMemcpy + wall clock
//   peer/bidir/gpu0-gpu1/...                      both directions at once
// docs/scope.md lists every row and its method.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace dtmpi::scope {

struct Options {
  std::vector<int64_t> sizes;  // transfer sizes in bytes, increasing
  int gpu = 0;                 // the GPU of host<->device rows
  int peer = -1;               // the second GPU of device<->device rows (-1: none)
  bool flush = true;           // flush CPU caches over host buffers before host transfers
  bool quick = false;
};

// What this machine offers the suite (detect_machine fills it).
struct Machine {
  int gpus = 0;                // CUDA devices (0: every GPU row is skipped)
  std::string no_gpu;          // why there is none ("no GPU: ...")
  std::vector<std::string> gpu_names;
  bool peer_ok = false;        // gpu and peer can map each other's memory
  std::string no_peer;         // why the peer rows are skipped
  bool managed_ok = false;     // concurrent managed access (demand migration, prefetch)
  std::string no_managed;
  int numa_nodes = 1;          // NUMA nodes with memory (libnuma; numa().ids names them)
  std::string no_numa;         // why the NUMA rows are skipped
  int gpu_numa_node = -1;      // the node nearest the GPU, -1 unknown
  // nominal link figures, GB/s per direction (0: unknown), and how they were found
  double hbm = 0, pcie = 0, nvlink = 0;
  std::string hbm_how, pcie_how, nvlink_how;
};

const Options& options();
const Machine& machine();
Options& mutable_options();
Machine& mutable_machine();

// ---------------------------------------------------------------- registry --
// A row's body runs the benchmark loop for one size (bytes; 0 for rows
// without sizes) and returns an Error for a failure, which the row reports as
// "error: ..." (a skip is decided when the row is registered).
using Body = std::function<Status(benchmark::State&, int64_t bytes)>;

enum class Timing { kManual, kReal };

struct Row {
  std::string name{};           // FAMILY/DIRECTION/PLACE
  Body body{};
  std::string skip{};           // non-empty: registered once, reported "skipped: <skip>"
  Timing timing = Timing::kManual;
  std::vector<int64_t> sizes{};  // instances: one per size (ArgName "bytes")
  const char* arg_name = "bytes";
  std::vector<int> threads{};   // Google Benchmark threads (CPU-cost rows)
  int multiplier = 1;         // bytes moved per iteration / size (2 for bidirectional)
};

// Registers `row` with Google Benchmark: the statistics (median, min, max,
// spread), the bytes counter and bandwidth, the time unit; remembers the
// full names for the progress count and the MPI decision.
void add(Row row);
// Sizes of the transfer rows (options().sizes, at most `max_bytes`).
std::vector<int64_t> sizes_up_to(int64_t max_bytes);
// Every full name registered (as Google Benchmark names the instances).
const std::vector<std::string>& registered_names();
// The registered instances Google Benchmark's filter selects, how many, and
// whether any selected name starts with `prefix`.
std::vector<std::string> selected(const std::string& filter);
size_t count_selected(const std::string& filter);
bool any_selected(const std::string& filter, const std::string& prefix);

// "1 KiB", "64 MiB"
std::string bytes_text(double b);

// ------------------------------------------------------------ the rows ------
void register_host_rows();        // scope_host.cpp: CPU only (CI)
void register_gpu_rows();         // scope_explicit/implicit/strided/cost.cpp, or the no-CUDA stub
// MPI is initialized by main only when a selected row needs it (dtmpi/mpi-*, dtmpi/pack-*).
inline constexpr const char* kMpiRowPrefix = "dtmpi/mpi";
inline constexpr const char* kPackRowPrefix = "dtmpi/pack";

// Machine detection (GPU part: scope_machine.cpp or the stub).
void detect_machine();

// ------------------------------------------------------------- host memory --
// Writes the CPU cache lines of [p, p + bytes) back and invalidates them
// (clflush on x86-64, dc civac on AArch64); false where neither exists.
bool flush_cache(const void* p, size_t bytes);
// Only buffers up to this size are flushed: above it, at most a small part of
// the buffer can be in any cache (docs/scope.md).
inline constexpr size_t kFlushMax = size_t{256} << 20;

// libnuma, opened at run time (dlopen libnuma.so.1): node count, allocation
// on a node, running the calling thread on a node (-1: anywhere).
struct Numa {
  bool ok = false;
  int nodes = 1;
  std::vector<int> ids;  // the nodes with memory (not always 0..nodes-1)
  void* (*alloc_onnode)(size_t, int) = nullptr;
  void (*free)(void*, size_t) = nullptr;
  int (*run_on_node)(int) = nullptr;
};
const Numa& numa();

// The test pattern: byte `offset` of a source buffer, for `seed`. Host and
// device fill it alike (scope_pattern.hpp has the device form).
void fill_host(void* p, size_t bytes, uint32_t seed);

}  // namespace dtmpi::scope
