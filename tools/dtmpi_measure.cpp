// dtmpi-measure [--quick] [--out DIR] (usage: below, or --help): measures what the performance model
// needs on this machine (2 MPI ranks; on two nodes when launched so) and
// writes model-<host>-<gpu>.json into the cache directory (DTMPI_CACHE_DIR,
// else $XDG_CACHE_HOME/dtmpi): one-way host MPI time over 2^0..2^26 bytes,
// pinned device<->host copies, GPU to GPU between the two ranks (a copy out of
// the other rank's buffer mapped over CUDA IPC, as the device method does), and
// pack/unpack kernel times into device and mapped host memory over object
// size x block size. The copy terms come from dtmpi-scope's results where it
// measured this host and GPU (scope/scope_results.hpp). Every point: warm-up,
// samples of at least 200 us, the median of 5, its spread, re-measured (at
// most twice) when unstable.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <tuple>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "cli.hpp"
#include "files.hpp"
#include "runtime/device.hpp"
#include "runtime/device_pack.hpp"
#include "runtime/system_info.hpp"
#include "scope/scope_results.hpp"
#include "transport/model.hpp"
#include "transport/predict.hpp"
#include "transport/transfer.hpp"
#include "type/registry.hpp"
#ifdef DTMPI_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tp = dtmpi::transport;
namespace rt = dtmpi::runtime;

namespace {

int g_rank = 0;
double g_min_sample = 200e-6;
constexpr int kSamples = 5;

// Progress on rank 0: phase, points done, time left. A bar redrawn in place
// (\r) on a terminal; plain lines at each quarter of a phase otherwise, so a
// log or a pipe gets readable lines instead of one line of redraws.
struct Progress {
  std::string phase;
  int done = 0, total = 1;
  int quarter = 0;  // plain lines: the last quarter printed
  bool terminal = isatty(fileno(stderr)) != 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  void start(const std::string& p, int n) {
    phase = p;
    done = 0;
    quarter = 0;
    total = std::max(n, 1);
    t0 = std::chrono::steady_clock::now();
    show();
  }
  void step() {
    ++done;
    show();
  }
  void show() {
    if (g_rank != 0) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double left = done ? el / done * (total - done) : 0;
    if (!terminal) {
      const int q = 4 * done / total;
      if (done > 0 && q == quarter) return;
      quarter = q;
      if (done == 0)
        std::fprintf(stderr, "%s: %d points\n", phase.c_str(), total);
      else if (done == total)
        std::fprintf(stderr, "%s: %d/%d done in %.0f s\n", phase.c_str(), done, total, el);
      else
        std::fprintf(stderr, "%s: %d/%d, %.0f s left\n", phase.c_str(), done, total, left);
      return;
    }
    const int width = 30, filled = width * done / total;
    std::fprintf(stderr, "\r%-26s [%s%s] %3d/%-3d  %5.0f s left ", phase.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done, total, left);
    if (done == total) std::fprintf(stderr, "\n");
  }
} g_progress;

struct Point {
  double median, spread;
};

// Times op (identical on every rank that calls it with `comm`'s agreement):
// repetitions so a sample lasts >= g_min_sample, 5 samples, median and spread;
// an unstable point (spread > 20%) is measured again, at most twice.
Point measure(const std::function<void()>& op, MPI_Comm comm) {
  op();
  op();
  auto now = [] { return std::chrono::steady_clock::now(); };
  // the repetition count from the fastest of a few single runs: one run that
  // met a descheduled peer (milliseconds on a loaded machine) would otherwise
  // leave one repetition per sample and a median of stalls
  double one = 1e30;
  auto t0 = now();
  for (int k = 0; k < 5; ++k) {
    PMPI_Barrier(comm);
    t0 = now();
    op();
    one = std::min(one, std::chrono::duration<double>(now() - t0).count());
  }
  PMPI_Bcast(&one, 1, MPI_DOUBLE, 0, comm);
  const int reps = static_cast<int>(std::clamp(g_min_sample / std::max(one, 1e-9), 1.0, 1e6));
  Point best{0, 1e9};
  for (int attempt = 0; attempt < 3 && best.spread > 0.2; ++attempt) {
    std::vector<double> s;
    for (int k = 0; k < kSamples; ++k) {
      PMPI_Barrier(comm);
      t0 = now();
      for (int r = 0; r < reps; ++r) op();
      s.push_back(std::chrono::duration<double>(now() - t0).count() / reps);
    }
    std::sort(s.begin(), s.end());
    Point p{s[kSamples / 2], (s.back() - s.front()) / s[kSamples / 2]};
    PMPI_Bcast(&p, 2, MPI_DOUBLE, 0, comm);
    if (p.spread < best.spread) best = p;
  }
  return best;
}

std::vector<double> powers(int lo, int hi, int step) {
  std::vector<double> v;
  for (int e = lo; e <= hi; e += step) v.push_back(static_cast<double>(int64_t{1} << e));
  if (v.back() < static_cast<double>(int64_t{1} << hi)) v.push_back(static_cast<double>(int64_t{1} << hi));
  return v;
}

tp::Curve host_mpi(const std::vector<double>& sizes, int peer) {
  tp::Curve c;
  g_progress.start("host MPI ping-pong", static_cast<int>(sizes.size()));
  std::vector<char> buf(static_cast<size_t>(sizes.back()));
  for (double s : sizes) {
    const int n = static_cast<int>(s);
    auto p = measure(
        [&] {
          if (g_rank == 0) {
            PMPI_Send(buf.data(), n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            PMPI_Recv(buf.data(), n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          } else {
            PMPI_Recv(buf.data(), n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            PMPI_Send(buf.data(), n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
          }
        },
        MPI_COMM_WORLD);
    c.bytes.push_back(s);
    c.seconds.push_back(p.median / 2);
    c.spread.push_back(p.spread);
    g_progress.step();
  }
  return c;
}

#ifdef DTMPI_HAVE_CUDA
// A curve of one copy kind, measured by rank 0 alone.
tp::Curve copies(const char* phase, const std::vector<double>& sizes, void* dst, const void* src) {
  tp::Curve c;
  g_progress.start(phase, static_cast<int>(sizes.size()));
  for (double s : sizes) {
    auto p = measure(
        [&] {
          cudaMemcpyAsync(dst, src, static_cast<size_t>(s), cudaMemcpyDefault, nullptr);
          cudaStreamSynchronize(nullptr);
        },
        MPI_COMM_SELF);
    c.bytes.push_back(s);
    c.seconds.push_back(p.median);
    c.spread.push_back(p.spread);
    g_progress.step();
  }
  return c;
}

// Pack or unpack of a 2D object (blocks of `block` bytes, pitch 2 x block,
// and for the device kernels also 16 x block: stride matters where blocks are sparse)
// between device memory and `other` (device or mapped pinned), rank 0 alone.
void pack_grids(const std::vector<double>& sizes, const std::vector<double>& blocks, tp::Model& m) {
  tp::Grid* grids[6] = {&m.pack_device, &m.unpack_device, &m.pack_mapped, &m.unpack_mapped, &m.pack_device_wide,
                        &m.unpack_device_wide};
  for (auto* g : grids) {
    g->bytes = sizes;
    g->blocks = blocks;
    g->seconds.assign(sizes.size(), std::vector<double>(blocks.size(), -1));
    g->spread.assign(sizes.size(), std::vector<double>(blocks.size(), 0));
  }
  int points = 0;
  for (double s : sizes)
    for (double b : blocks) points += b <= s ? 1 : 0;
  g_progress.start("pack/unpack kernels", points);
  const double max_span = tp::kWidePitch * sizes.back();
  void *dev_user, *dev_packed, *host_packed;
  cudaMalloc(&dev_user, static_cast<size_t>(max_span));
  cudaMalloc(&dev_packed, static_cast<size_t>(sizes.back()));
  cudaHostAlloc(&host_packed, static_cast<size_t>(sizes.back()), cudaHostAllocMapped | cudaHostAllocPortable);
  int dev = 0;
  cudaGetDevice(&dev);
  rt::PointerInfo user_info{rt::MemKind::kDevice, dev, nullptr};
  rt::PointerInfo dev_info{rt::MemKind::kDevice, dev, nullptr};
  rt::PointerInfo host_info = rt::pointer_info_exact(host_packed);  // pinned: the GPU writes it directly
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t j = 0; j < blocks.size(); ++j) {
      const int64_t s = static_cast<int64_t>(sizes[i]), b = static_cast<int64_t>(blocks[j]);
      if (b > s) continue;
      for (int wide = 0; wide < 2; ++wide) {
      const double pitch = (wide ? tp::kWidePitch : tp::kNarrowPitch) * static_cast<double>(b);
      MPI_Datatype t;
      PMPI_Type_vector(static_cast<int>(s / b), static_cast<int>(b), static_cast<int>(pitch), MPI_BYTE, &t);
      PMPI_Type_commit(&t);
      auto plan = dtmpi::type::commit_plan(t);
      if (plan) {
        const std::function<void()> ops[4] = {
            [&] { (void)rt::gpu_pack(*plan, 1, dev_user, user_info, dev_packed, dev_info); },
            [&] { (void)rt::gpu_unpack(*plan, 1, dev_packed, dev_info, dev_user, user_info); },
            [&] { (void)rt::gpu_pack(*plan, 1, dev_user, user_info, host_packed, host_info); },
            [&] { (void)rt::gpu_unpack(*plan, 1, host_packed, host_info, dev_user, user_info); }};
        // narrow: all four; wide: the device kernels (the mapped ones are bound by PCIe)
        for (int k = 0; k < (wide ? 2 : 4); ++k) {
          auto p = measure(ops[k], MPI_COMM_SELF);
          grids[k + (wide ? 4 : 0)]->seconds[i][j] = p.median;
          grids[k + (wide ? 4 : 0)]->spread[i][j] = p.spread;
        }
      }
      dtmpi::type::forget_plan(t);
      PMPI_Type_free(&t);
      }
      g_progress.step();
    }
  }
  cudaFree(dev_user);
  cudaFree(dev_packed);
  cudaFreeHost(host_packed);
}
#endif

#ifdef DTMPI_HAVE_CUDA
// The copy terms dtmpi-scope measured on this host and GPU already (its naive/
// rows time exactly these copies: cudaMemcpyAsync + cudaStreamSynchronize by
// the wall clock), rank 0 on GPU 0 reading from GPU `src_gpu`; empty curves
// for what it lacks (docs/scope.md, "dtmpi-measure").
dtmpi::scope::ModelTerms scope_terms(const std::string& path, bool named, const tp::Model& m, int src_gpu) {
  dtmpi::scope::ModelTerms t;
  std::ifstream f(path);
  if (!f) {
    if (named) std::fprintf(stderr, "dtmpi-measure: cannot read %s: measuring every term\n", path.c_str());
    return t;
  }
  std::stringstream text;
  text << f.rdbuf();
  std::string why;
  if (!dtmpi::scope::read_model_terms(text.str(), m.host, m.gpu, 0, src_gpu, t, &why)) {
    std::printf("dtmpi-scope results %s not used: %s\n", path.c_str(), why.c_str());
    return {};
  }
  if (!m.same_node) t.ipc = {};  // between nodes the GPU to GPU term is not a copy
  for (auto [c, row, what] : {std::tuple{&t.d2h, t.d2h_row, "d2h"}, std::tuple{&t.h2d, t.h2d_row, "h2d"},
                              std::tuple{&t.ipc, t.ipc_row, "ipc"}})
    if (!c->empty())
      std::printf("%s: from dtmpi-scope (%s, %zu sizes, %s), not measured again\n", what, row.c_str(),
                  c->bytes.size(), path.c_str());
  return t;
}
#endif

const std::vector<dtmpi::tools::Option> kOptions = {
    {"--quick", nullptr, "fewer sizes and shorter samples (about a quarter of the time; the model records it)"},
    {"--out", "DIR", "write the model into DIR instead of the cache directory (created if missing)"},
    {"--scope", "FILE", "take the copy terms from this dtmpi-scope result (default: scope-<host>-<gpu>.json in the "
                        "cache directory, where dtmpi-scope leaves it)"},
    {"--no-scope", nullptr, "measure the copy terms even where dtmpi-scope's results have them"},
    {"--help", nullptr, "this help"}};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: mpiexec -n 2 dtmpi-measure [--quick] [--out DIR] [--scope FILE | --no-scope]\n"
               "\n"
               "Measures this machine for dtmpi's performance model (docs/performance-model.md), once per\n"
               "machine: host MPI one-way time over 1 B-64 MiB between the 2 ranks (2 nodes when launched so)\n"
               "and, with a GPU, device<->host copies, GPU to GPU over CUDA IPC and the pack/unpack kernels.\n"
               "Writes model-<host>-<gpu>.json (and .decisions.csv) into the cache directory: DTMPI_CACHE_DIR,\n"
               "else $XDG_CACHE_HOME/dtmpi, else ~/.cache/dtmpi (created if missing). MPI_Init reads it from\n"
               "there; dtmpi-info shows which model is in force. A few minutes (--quick: about one).\n"
               "Where dtmpi-scope measured this host and GPU (its results in the cache directory), the\n"
               "device<->host and GPU to GPU copy terms come from its rows and are not measured again\n"
               "(docs/scope.md); it says so.\n"
               "\n"
               "options:\n");
  dtmpi::tools::print_options(f, kOptions);
  std::fprintf(f, "\nNext: dtmpi-info (the model in force); scripts/plot_model.py MODEL.json out.png (heatmaps)\n");
}

}  // namespace

int main(int argc, char** argv) {
  dtmpi::tools::Args args;
  if (int rc = dtmpi::tools::parse("dtmpi-measure", argc, argv, 1, kOptions, usage, args); rc >= 0) return rc;
  PMPI_Init(&argc, &argv);
  int n = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &n);
  const bool quick = args.has("--quick");
  const std::string out_dir = args.get("--out", tp::model_cache_dir().c_str());
  if (n != 2) {
    if (g_rank == 0) std::fprintf(stderr, "dtmpi-measure needs exactly 2 ranks (mpiexec -n 2 dtmpi-measure)\n");
    PMPI_Finalize();
    return 2;
  }
  // the directory first: a measurement of minutes must not end in "cannot write"
  int dir_ok = 1;
  if (g_rank == 0) {
    std::string error;
    dir_ok = dtmpi::tools::make_directories(out_dir, error) ? 1 : 0;
    if (!dir_ok)
      std::fprintf(stderr, "dtmpi-measure: %s (set DTMPI_CACHE_DIR or --out to a writable directory)\n",
                   error.c_str());
  }
  PMPI_Bcast(&dir_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!dir_ok) {
    PMPI_Finalize();
    return 1;
  }
  if (quick) g_min_sample = 50e-6;
  tp::Model m;
  m.library_version = DTMPI_VERSION;
  m.quick = quick;
  m.min_sample_s = g_min_sample;
  m.samples = kSamples;
  char host[256] = {}, peer_host[256] = {};
  gethostname(host, sizeof host - 1);
  PMPI_Sendrecv(host, 256, MPI_CHAR, 1 - g_rank, 9, peer_host, 256, MPI_CHAR, 1 - g_rank, 9, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE);
  m.host = host;
  m.same_node = std::strcmp(host, peer_host) == 0;
  const auto gpus = rt::query_gpus();
  const bool gpu = rt::gpu_enabled() && !gpus.names.empty();
  m.gpu = gpu ? gpus.names[0] : "";
  m.mpi = host_mpi(powers(0, 26, quick ? 4 : 2), 1 - g_rank);
#ifdef DTMPI_HAVE_CUDA
  if (gpu) {
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    cudaSetDevice(g_rank % ndev);
    const auto sizes = powers(0, 26, quick ? 4 : 2);
    const size_t big = static_cast<size_t>(sizes.back());
    // GPU to GPU the way the device method moves bytes: rank 1 exports a
    // buffer over CUDA IPC, rank 0 maps it and copies into its own device
    cudaIpcMemHandle_t handle{};
    void* exported = nullptr;
    int ipc_ok = 0;
    if (g_rank == 1 && m.same_node && cudaMalloc(&exported, big) == cudaSuccess &&
        cudaIpcGetMemHandle(&handle, exported) == cudaSuccess)
      ipc_ok = 1;
    PMPI_Bcast(&ipc_ok, 1, MPI_INT, 1, MPI_COMM_WORLD);
    PMPI_Bcast(&handle, sizeof handle, MPI_BYTE, 1, MPI_COMM_WORLD);
    if (g_rank == 0) {
      dtmpi::scope::ModelTerms scope;
      if (!args.has("--no-scope"))
        scope = scope_terms(args.get("--scope", (tp::model_cache_dir() + "/" +
                                                 dtmpi::scope::results_file_name(m.host, m.gpu)).c_str()),
                            args.has("--scope"), m, 1 % ndev);
      void *d, *h, *peer = nullptr;
      cudaMalloc(&d, big);
      cudaHostAlloc(&h, big, cudaHostAllocDefault);
      m.d2h = scope.d2h.empty() ? copies("device to host", sizes, h, d) : scope.d2h;
      m.h2d = scope.h2d.empty() ? copies("host to device", sizes, d, h) : scope.h2d;
      if (ipc_ok && !scope.ipc.empty()) {
        m.ipc = scope.ipc;
      } else if (ipc_ok && cudaIpcOpenMemHandle(&peer, handle, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess) {
        m.ipc = copies("GPU to GPU over CUDA IPC", sizes, d, peer);
        cudaIpcCloseMemHandle(peer);
      }
      cudaGetLastError();
      cudaFree(d);
      cudaFreeHost(h);
      pack_grids(quick ? powers(10, 26, 8) : powers(10, 26, 4),
                 quick ? std::vector<double>{1, 16, 256, 4096} : powers(0, 12, 2), m);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    if (exported) cudaFree(exported);
  }
#endif
  int rc = 0;
  if (g_rank == 0) {
    const std::string path = out_dir + "/" + tp::model_file_name(m.host, m.gpu);
    std::ofstream f(path);
    f << tp::to_json(m);
    f.close();
    if (!f) {
      std::fprintf(stderr, "dtmpi-measure: cannot write %s\n", path.c_str());
      rc = 1;
    } else {
      std::printf("wrote %s (%s%s)\n", path.c_str(), m.gpu.empty() ? "host terms only" : m.gpu.c_str(),
                  quick ? ", quick" : "");
      // the choices this model makes, for the heatmap script
      const std::string dpath = path.substr(0, path.size() - 5) + ".decisions.csv";
      std::ofstream d(dpath);
      d << "bytes,block,ipc,method,oneshot,staged,pipelined,device\n";
      for (int ipc = 0; ipc < 2; ++ipc)
        for (int e = 10; e <= 26; ++e)
          for (int k = 0; k <= 12 && k <= e; ++k) {
            tp::Shape s;
            s.bytes = int64_t{1} << e;
            s.block = int64_t{1} << k;
            s.multi = s.bytes >= tp::kMultiMin;
            s.ipc = ipc && s.multi && !m.ipc.empty();
            const auto p = tp::predict(m, s, int64_t{2} << 20);
            d << s.bytes << "," << s.block << "," << ipc << "," << tp::method_name(p.best);
            for (double t : p.seconds) d << "," << t;
            d << "\n";
          }
      std::printf("heatmaps: scripts/plot_model.py %s model.png\n", path.c_str());
    }
  }
  PMPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  PMPI_Finalize();
  return rc;
}
