// dtmpi-scope [options] [--benchmark_*=...] (usage: below, or --help): the
// transfer measurement suite of Pearson's thesis, chapter 3 (Comm|Scope), on
// Google Benchmark; docs/scope.md.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../cli.hpp"
#include "../files.hpp"
#include "scope.hpp"
#include "scope_report.hpp"
#include "scope_results.hpp"
#include "transport/predict.hpp"

namespace sc = dtmpi::scope;

namespace {

const std::vector<dtmpi::tools::Option> kOptions = {
    {"--quick", nullptr, "powers of 4 from 1 B to 1 GiB, 3 repetitions of at least 2 ms each (default: every power "
                         "of 2, 5 repetitions of at least 20 ms)"},
    {"--max-bytes", "B", "largest transfer (K, M, G suffixes; default 1G)"},
    {"--gpu", "N", "the GPU of the host<->device rows (default 0)"},
    {"--peer", "N", "the second GPU of the GPU<->GPU rows (default: the next one; skipped with one GPU)"},
    {"--no-flush", nullptr, "leave the CPU caches alone before host-memory transfers"},
    {"--out", "DIR", "write DIR/scope.json (Google Benchmark JSON) and DIR/scope-summary.txt (default dtmpi-scope-out)"},
    {"--no-cache", nullptr, "do not leave the results in dtmpi's cache directory for dtmpi-measure"},
    {"--list", nullptr, "list the benchmarks the filter selects, run nothing"},
    {"--help", nullptr, "this help"}};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: dtmpi-scope [options] [--benchmark_filter=REGEX] [--benchmark_*=VALUE ...]\n"
               "\n"
               "Measures every CUDA data-transfer primitive and the CPU cost of CUDA calls the way Comm|Scope\n"
               "does (Pearson's thesis, chapter 3; docs/scope.md): CUDA events around asynchronous work, a\n"
               "busy-wait kernel to start both directions of a bidirectional transfer together (restarted with\n"
               "a longer wait when it ended too early), the wall clock for synchronous calls, reads that the\n"
               "compiler cannot drop, CPU caches flushed before host transfers, median/min/max/spread over the\n"
               "repetitions; every transfer's bytes are checked. Rows (FAMILY/DIRECTION/PLACE/bytes:N):\n"
               "  pageable|pinned/{h2d,d2h,bidir}/[nodeK-]gpuG  explicit copies (NUMA node K where there are several)\n"
               "  naive/...                          the same by cudaMemcpyAsync + sync and the wall clock\n"
               "  device/d2d, peer|nopeer/{d2d,bidir} copies within a GPU, between GPUs with/without peer access\n"
               "  zerocopy/{h2d,d2h,d2d,bidir}       kernels reading/writing mapped host or another GPU's memory\n"
               "  managed-demand|managed-prefetch/{h2d,d2h,bidir,d2d}  managed memory by page faults / prefetch\n"
               "  memcpy2d|memcpy3d|memcpy3dpeer/... cudaMemcpy2DAsync, 3DAsync, 3DPeerAsync of strided data\n"
               "  kernel/{h2d,d2h,d2d}, kernel-pull|kernel-push/d2d  custom copy kernels\n"
               "  cpu/...                            CPU cost: cudaMemcpyAsync, 3DPeerAsync, launches (0-4096 B of\n"
               "                                     parameters), threads' aggregate rate, graphs vs ops\n"
               "  host/memcpy, dtmpi/...             the host's copy; what dtmpi adds (interposed MPI call, pointer\n"
               "                                     classification, one pack launch) -- these need no GPU\n"
               "Without a GPU the GPU rows report \"skipped: no GPU\". With results of the pinned and GPU to GPU\n"
               "rows, a copy goes to the cache directory (DTMPI_CACHE_DIR, else ~/.cache/dtmpi) as\n"
               "scope-<host>-<gpu>.json, where dtmpi-measure finds it and measures those terms no more.\n"
               "Rows that need MPI (dtmpi/mpi-*, dtmpi/pack-*) start it: run under mpiexec -n 1 where a\n"
               "singleton MPI_Init does not work.\n"
               "\n"
               "options:\n");
  dtmpi::tools::print_options(f, kOptions);
  std::fprintf(f,
               "\nGoogle Benchmark's flags pass through (as --benchmark_X=VALUE), e.g. --benchmark_filter='^pinned/'\n"
               "(a regular expression; a leading '-' excludes), --benchmark_repetitions=N, --benchmark_min_time=S,\n"
               "--benchmark_out=FILE --benchmark_out_format=json|csv|console, --benchmark_list_tests=true.\n"
               "\nNext: scripts/plot_scope.py DIR/scope.json DIR/scope (PNG figures); dtmpi-measure (uses the results)\n");
}

bool parse_bytes(const std::string& s, int64_t& out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v < 1) return false;
  double m = 1;
  const std::string suffix = end;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") m = 1024;
  else if (suffix == "M" || suffix == "MiB") m = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") m = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) return false;
  out = static_cast<int64_t>(v * m);
  return true;
}

bool parse_int(const char* s, int& out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end || v < 0 || v > 1024) return false;
  out = static_cast<int>(v);
  return true;
}

std::string host_name() {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void add_context(bool quick) {
  const auto& m = sc::machine();
  const auto& o = sc::options();
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v);
    return std::string(b);
  };
  benchmark::AddCustomContext("dtmpi_scope_format", "1");
  benchmark::AddCustomContext("dtmpi_version", DTMPI_VERSION);
  benchmark::AddCustomContext("dtmpi_host", host_name());
  benchmark::AddCustomContext("dtmpi_gpu", m.gpus > o.gpu ? m.gpu_names[static_cast<size_t>(o.gpu)] : "");
  benchmark::AddCustomContext("dtmpi_gpu_index", std::to_string(o.gpu));
  benchmark::AddCustomContext("dtmpi_peer_index", std::to_string(o.peer));
  benchmark::AddCustomContext("dtmpi_gpus", m.gpus ? join(m.gpu_names) : m.no_gpu);
  benchmark::AddCustomContext("dtmpi_nominal_hbm_gbps", num(m.hbm));
  benchmark::AddCustomContext("dtmpi_nominal_hbm_how", m.hbm_how);
  benchmark::AddCustomContext("dtmpi_nominal_pcie_gbps", num(m.pcie));
  benchmark::AddCustomContext("dtmpi_nominal_pcie_how", m.pcie_how);
  benchmark::AddCustomContext("dtmpi_nominal_nvlink_gbps", num(m.nvlink));
  benchmark::AddCustomContext("dtmpi_nominal_nvlink_how", m.nvlink_how);
  benchmark::AddCustomContext("dtmpi_numa_nodes", std::to_string(m.numa_nodes) + (m.no_numa.empty() ? "" : " (" + m.no_numa + ")"));
  benchmark::AddCustomContext("dtmpi_gpu_numa_node", std::to_string(m.gpu_numa_node));
  benchmark::AddCustomContext("dtmpi_cache_flush", o.flush ? "on (up to 256 MiB)" : "off");
  benchmark::AddCustomContext("dtmpi_mode", quick ? "quick" : "full");
  std::ifstream gov("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::string g;
  benchmark::AddCustomContext("dtmpi_cpu_governor", std::getline(gov, g) ? g : "unknown");
}

// The results go to the cache directory when dtmpi-measure can use them.
void leave_in_cache(const std::string& json_path) {
  const auto& m = sc::machine();
  if (m.gpus == 0) return;
  std::ifstream in(json_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string gpu = m.gpu_names[static_cast<size_t>(sc::options().gpu)];
  sc::ModelTerms terms;
  std::string why;
  if (!sc::read_model_terms(text.str(), host_name(), gpu, sc::options().gpu, sc::options().gpu, terms, &why)) {
    std::printf("not left for dtmpi-measure: %s\n", why.c_str());
    return;
  }
  const std::string dir = dtmpi::transport::model_cache_dir();
  std::string error;
  if (!dtmpi::tools::make_directories(dir, error)) {
    std::printf("not left for dtmpi-measure: %s\n", error.c_str());
    return;
  }
  const std::string path = dir + "/" + sc::results_file_name(host_name(), gpu);
  std::ofstream out(path);
  out << text.str();
  out.close();
  std::printf("%s %s: dtmpi-measure takes its copy terms from there\n", out ? "left in" : "could not write", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Google Benchmark's flags pass through; the tool's own are parsed like every dtmpi tool's
  std::vector<char*> gb = {argv[0]}, own = {argv[0]};
  for (int i = 1; i < argc; ++i) (std::strncmp(argv[i], "--benchmark_", 12) == 0 ? gb : own).push_back(argv[i]);
  dtmpi::tools::Args args;
  if (int rc = dtmpi::tools::parse("dtmpi-scope", static_cast<int>(own.size()), own.data(), 1, kOptions, usage, args);
      rc >= 0)
    return rc;
  auto& o = sc::mutable_options();
  o.quick = args.has("--quick");
  o.flush = !args.has("--no-flush");
  int64_t max_bytes = int64_t{1} << 30;
  if (args.has("--max-bytes") && !parse_bytes(args.get("--max-bytes", ""), max_bytes)) {
    std::fprintf(stderr, "dtmpi-scope: --max-bytes wants a size like 64M\nRun 'dtmpi-scope --help' for the usage.\n");
    return 2;
  }
  for (int64_t s = 1; s <= max_bytes; s *= o.quick ? 4 : 2) o.sizes.push_back(s);
  o.peer = -2;  // the next GPU, unless told
  if ((args.has("--gpu") && !parse_int(args.get("--gpu", ""), o.gpu)) ||
      (args.has("--peer") && !parse_int(args.get("--peer", ""), o.peer))) {
    std::fprintf(stderr, "dtmpi-scope: --gpu and --peer want a device number\nRun 'dtmpi-scope --help' for the usage.\n");
    return 2;
  }
  const std::string out_dir = args.get("--out", "dtmpi-scope-out");
  // defaults for Google Benchmark where not given
  std::vector<std::string> extra;
  auto given = [&](const char* flag) {
    for (char* a : gb)
      if (std::strncmp(a, flag, std::strlen(flag)) == 0) return true;
    return false;
  };
  if (!given("--benchmark_repetitions")) extra.push_back(o.quick ? "--benchmark_repetitions=3" : "--benchmark_repetitions=5");
  if (!given("--benchmark_min_time")) extra.push_back(o.quick ? "--benchmark_min_time=0.002" : "--benchmark_min_time=0.02");
  std::string json_path = out_dir + "/scope.json";
  if (!given("--benchmark_out=")) {
    extra.push_back("--benchmark_out=" + json_path);
    if (!given("--benchmark_out_format")) extra.push_back("--benchmark_out_format=json");
  } else {
    json_path.clear();
    for (char* a : gb)
      if (std::strncmp(a, "--benchmark_out=", 16) == 0) json_path = a + 16;
  }
  for (auto& e : extra) gb.push_back(e.data());
#ifdef DTMPI_BENCHMARK_MIN_TIME_UNIT
  // bare seconds (ours and the caller's) in the form this library takes
  std::vector<std::string> with_unit;
  with_unit.reserve(gb.size());
  for (char*& a : gb) {
    std::string v = a;
    if (v.rfind("--benchmark_min_time=", 0) == 0 && !v.empty() && std::isdigit(static_cast<unsigned char>(v.back()))) {
      with_unit.push_back(v + "s");
      a = with_unit.back().data();
    }
  }
#endif
  int gbc = static_cast<int>(gb.size());
  gb.push_back(nullptr);
  benchmark::Initialize(&gbc, gb.data());
  if (benchmark::ReportUnrecognizedArguments(gbc, gb.data())) {
    std::fprintf(stderr, "Run 'dtmpi-scope --help' for the usage.\n");
    return 2;
  }
  std::string error;
  if (!args.has("--list") && !dtmpi::tools::make_directories(out_dir, error)) {
    std::fprintf(stderr, "dtmpi-scope: %s (--out DIR names where the results go)\n", error.c_str());
    return 1;
  }

  auto& m = sc::mutable_machine();
  m.numa_nodes = sc::numa().ok ? sc::numa().nodes : 1;
  m.no_numa = !sc::numa().ok ? "libnuma.so.1 not available" : m.numa_nodes < 2 ? "one NUMA node" : "";
  sc::detect_machine();
  if (o.peer == -2) o.peer = -1;
  if (m.gpus > 0 && (o.gpu >= m.gpus || o.peer >= m.gpus || o.peer == o.gpu)) {
    std::fprintf(stderr, "dtmpi-scope: --gpu %d / --peer %d: this machine has GPUs 0..%d (and they must differ)\n",
                 o.gpu, o.peer, m.gpus - 1);
    return 2;
  }
  sc::register_host_rows();
  sc::register_gpu_rows();
  const std::string filter = benchmark::GetBenchmarkFilter();
  if (args.has("--list")) {
    for (const auto& n : sc::selected(filter)) std::printf("%s\n", n.c_str());
    return 0;
  }
  add_context(o.quick);
  const bool mpi = sc::any_selected(filter, sc::kMpiRowPrefix) || sc::any_selected(filter, sc::kPackRowPrefix);
  if (mpi) MPI_Init(&argc, &argv);
  std::printf("dtmpi-scope: %s; %zu benchmarks selected%s\n",
              m.gpus ? ("GPU " + std::to_string(o.gpu) + " " + m.gpu_names[static_cast<size_t>(o.gpu)] +
                        (o.peer >= 0 ? ", peer GPU " + std::to_string(o.peer) : ", no peer GPU"))
                           .c_str()
                     : m.no_gpu.c_str(),
              sc::count_selected(filter), mpi ? "; MPI started for the dtmpi/ rows" : "");
  sc::Reporter reporter(sc::count_selected(filter));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& results = reporter.results();
  std::printf("\n");
  sc::print_tables(stdout, results);
  int failed = 0;
  for (const auto& r : results) failed += r.failed() ? 1 : 0;
  const std::string summary = out_dir + "/scope-summary.txt";
  if (FILE* f = std::fopen(summary.c_str(), "w")) {
    for (const auto& r : results) std::fprintf(f, "%s\n", sc::summary_line(r).c_str());
    std::fprintf(f, "\n");
    sc::print_tables(f, results);
    std::fclose(f);
    std::printf("\nwrote %s%s%s\n", json_path.empty() ? "" : (json_path + " and ").c_str(), summary.c_str(),
                json_path.empty() ? "" : ("\nplots: scripts/plot_scope.py " + json_path + " " + out_dir + "/scope").c_str());
  }
  if (!json_path.empty() && !args.has("--no-cache")) leave_in_cache(json_path);
  if (mpi) MPI_Finalize();
  benchmark::Shutdown();
  return failed ? 1 : 0;
}
