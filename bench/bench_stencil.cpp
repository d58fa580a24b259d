// dtmpi-bench stencil [--gpu] [--extent N] [--radius R] [--axes A] [--quantities Q] [--elem B] [--per-rank P] [--gpus G]
//                     [--iters K] [--samples S] [--path auto|staged|device] [--graphs on|off|both]
//                     [--shm on|off|both] [--no-overlap] [--progress P] [--no-placement] [--no-halo]
//
// The exchange of a dtmpi::stencil domain (include/dtmpi/stencil.hpp), per
// iteration: N^3 points per subdomain, P subdomains per rank, radius R on
// every side, Q quantities of B-byte elements, periodic on every axis (26
// directions, as dtmpi-bench halo). Printed side by side with
//   limit  the same number of halo bytes (everything this rank's exchange
//          moves: its MPI messages and its same-rank copies) copied once,
//          contiguously: memcpy on the host, one cudaMemcpyAsync device to
//          device on the GPU -- what no packing, no message and no launch
//          overhead would cost; the stencil's time is given as a ratio to it
//   halo   the plain-MPI halo of the same block, `dtmpi-bench halo --only
//          isend`, run in this process where it describes the same exchange
//          (1 subdomain per rank, 8-byte elements), else the command to run.
// --graphs both: the device exchange with and without CUDA graphs (the
// pack / copy / unpack launches replayed, DTMPI_STENCIL_GRAPHS), in turn.
// --shm (host memory; default both): the node's peers through shared memory
// (set_host_shared_memory(true)) and by MPI messages, in turn.
// Overlap (host memory, 8-byte elements as doubles; --no-overlap skips it):
// the interior compute alone (a radius-R star -- 6R+1 points -- over the
// interior of every quantity of every subdomain, current() into next()),
// the exchange alone, and start_exchange() + that compute (progress() after
// every P planes, default 1; 0: never) + finish_exchange(); hidden = (exchange + compute -
// overlapped) / exchange, the share of the exchange the compute covered.
// Times are per exchange, the slowest rank, the median of S samples of K
// exchanges. One exchange is checked first: every ghost point must hold its
// (wrapped) neighbour's value, else the run fails.
#include <mpi.h>
#ifdef DTMPI_BENCH_GPU
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "dtmpi/stencil.hpp"
#include "runtime/config.hpp"
#include "bench_stencil_limits.hpp"
#include "stencil/partition.hpp"
#include "topology/placement.hpp"
#include "timing.hpp"

namespace dtmpi::bench {
int bench_halo(int argc, char** argv);

namespace {

namespace st = dtmpi::stencil;

constexpr int kBoth = 2;  // --graphs both, --shm both

struct Options {
  bool gpu = false, placement = true, halo = true, overlap = true;
  int shm = kBoth;  // host memory: 0 messages, 1 shared memory, kBoth
  int progress = 1;  // overlap rows: planes of interior compute between progress() calls; 0 never
  int extent = 0, radius = 3, quantities = 8, elem = 8, per_rank = 1, iters = 20, samples = 5;
  std::string axes = "xyz";  // the axes the radius applies to (--axes; the others exchange nothing)
  int gpus = 1;  // GPUs per rank (set_gpus)
  st::PeerPath path = st::PeerPath::kAuto;
  int graphs = -1;  // -1: DTMPI_STENCIL_GRAPHS decides; 0 off, 1 on, kBoth
};

// --gpus G: this rank's GPUs, rank r's slot k on (r G + k) mod the device
// count, so that ranks with G each cover G x ranks GPUs before any repeats.
std::vector<int> gpus_of(const Options& o, int me) {
  std::vector<int> out;
  if (o.gpus <= 1) return out;  // the current device: set_gpus()'s default
#ifdef DTMPI_BENCH_GPU
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return out;
  for (int k = 0; k < o.gpus; ++k) out.push_back((me * o.gpus + k) % count);
#else
  (void)me;
#endif
  return out;
}

template <int kBytes>
struct Element {
  unsigned char b[kBytes];
};

std::string text(const st::Dim3& v) {
  return std::to_string(v.x) + "x" + std::to_string(v.y) + "x" + std::to_string(v.z);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The byte k of quantity q's element at global point p: never the 0 a ghost starts as.
unsigned char value(int q, const st::Dim3& p, int k) {
  uint64_t h = (static_cast<uint64_t>(q) * 1000003u + static_cast<uint64_t>(p.z)) * 1000003u;
  h = ((h + static_cast<uint64_t>(p.y)) * 1000003u + static_cast<uint64_t>(p.x)) * 31u + static_cast<uint64_t>(k);
  h ^= h >> 29;
  return static_cast<unsigned char>(1 + h % 255);
}

// The allocation of quantity q of subdomain s to and from the host.
bool copy_image(const Options& o, const st::Subdomain& s, int q, std::vector<unsigned char>& img, bool up) {
  const size_t bytes = static_cast<size_t>(s.pitch(q) * s.allocated().size().y * s.allocated().size().z);
  img.resize(bytes);
  if (!o.gpu) {
    if (up) std::memcpy(s.current_data(q), img.data(), bytes);
    else std::memcpy(img.data(), s.current_data(q), bytes);
    return true;
  }
#ifdef DTMPI_BENCH_GPU
  const bool copied = (up ? cudaMemcpy(s.current_data(q), img.data(), bytes, cudaMemcpyHostToDevice)
                          : cudaMemcpy(img.data(), s.current_data(q), bytes, cudaMemcpyDeviceToHost)) == cudaSuccess;
  // an upload from pageable memory may return before the subdomain's GPU
  // has the bytes; the exchange's streams do not wait for that
  int current = 0;
  return copied && cudaGetDevice(&current) == cudaSuccess && cudaSetDevice(s.device()) == cudaSuccess &&
         cudaDeviceSynchronize() == cudaSuccess && cudaSetDevice(current) == cudaSuccess;
#else
  return false;
#endif
}

// Owned points get value(), ghosts 0; after one exchange every ghost must
// hold its wrapped point's value. Returns this rank's wrong points (-1: a copy failed).
int64_t check_one_exchange(const Options& o, st::DistributedDomain& d) {
  const st::Dim3 e = d.extent();
  std::vector<unsigned char> img;
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < o.quantities; ++q) {
      const st::Box a = s.allocated(), b = s.box();
      img.assign(static_cast<size_t>(s.pitch(q) * a.size().y * a.size().z), 0);
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x)
            for (int k = 0; k < o.elem; ++k)
              img[static_cast<size_t>(((z - a.lo.z) * a.size().y + (y - a.lo.y)) * s.pitch(q) + (x - a.lo.x) * o.elem + k)] =
                  value(q, {x, y, z}, k);
      if (!copy_image(o, s, q, img, true)) return -1;
    }
  d.exchange();
  int64_t wrong = 0;
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < o.quantities; ++q) {
      if (!copy_image(o, s, q, img, false)) return -1;
      const st::Box a = s.allocated();
      for (int64_t z = a.lo.z; z < a.hi.z; ++z)
        for (int64_t y = a.lo.y; y < a.hi.y; ++y)
          for (int64_t x = a.lo.x; x < a.hi.x; ++x) {
            const st::Dim3 w{(x + e.x) % e.x, (y + e.y) % e.y, (z + e.z) % e.z};  // periodic everywhere
            for (int k = 0; k < o.elem; ++k)
              wrong += img[static_cast<size_t>(((z - a.lo.z) * a.size().y + (y - a.lo.y)) * s.pitch(q) +
                                               (x - a.lo.x) * o.elem + k)] != value(q, w, k);
          }
    }
  return wrong;
}

// Per-op time of `op` run K times between barriers: the slowest rank, median of S samples.
double slowest_median(const Options& o, const std::function<void()>& op) {
  std::vector<double> per;
  op();  // warm: first-touch, lazily created connections
  for (int s = 0; s < o.samples; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    for (int i = 0; i < o.iters; ++i) op();
    double mine = (now() - t0) / o.iters, worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    per.push_back(worst);
  }
  return median(per);
}

StencilTimer timer(const Options& o) {
  return [&o](const std::function<void()>& op) { return slowest_median(o, op); };
}

// The interior compute of the overlap rows: next = a radius-R star of
// current over interior() of every quantity (read as doubles), `between`
// after every plane (progress() while an exchange is in flight).
void interior_compute(const Options& o, st::DistributedDomain& d, const std::function<void()>& between) {
  const int r = o.radius;
  const double w0 = 0.25, wk = 0.75 / (6.0 * r);  // weights summing to 1: values stay 1
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < o.quantities; ++q) {
      const auto in = s.current(st::Quantity<double>{q});
      const auto out = s.next(st::Quantity<double>{q});
      const st::Box b = s.interior();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z) {
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x) {
            double acc = w0 * in(x, y, z);
            for (int k = 1; k <= r; ++k)
              acc += wk * (in(x - k, y, z) + in(x + k, y, z) + in(x, y - k, z) + in(x, y + k, z) + in(x, y, z - k) +
                           in(x, y, z + k));
            out(x, y, z) = acc;
          }
        between();
      }
    }
}

// Every point of both copies of every quantity 1.0: finite, normal doubles
// for the compute (the checked exchange left arbitrary bytes).
void ones(const Options& o, st::DistributedDomain& d) {
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < o.quantities; ++q) {
      const int64_t n = s.pitch(q) * s.allocated().size().y * s.allocated().size().z / 8;
      std::fill_n(static_cast<double*>(s.current_data(q)), n, 1.0);
      std::fill_n(static_cast<double*>(s.next_data(q)), n, 1.0);
    }
}

// One row of the results: a domain's exchange, and its overlap where measured.
struct Row {
  std::string label;
  double exchange = 0, compute = 0, overlapped = 0;  // s per exchange; compute 0: overlap not measured
};

// The global extent whose partition gives every subdomain N^3 points: the
// grid the partition chooses for a cube (the same rule, nodes x subdomains
// per node), scaled by N; checked, since a split of the scaled extent could
// in principle differ from the cube's.
st::Dim3 global_extent(const Options& o, int nodes, int per_node, std::string& why) {
  const int64_t side = int64_t{o.extent} * nodes * per_node;
  auto cube = st::Partition::make({side, side, side}, nodes, per_node);
  if (!cube) {
    why = cube.error().what;
    return {};
  }
  const st::Dim3 g = cube.value().grid();
  const st::Dim3 e{g.x * o.extent, g.y * o.extent, g.z * o.extent};
  auto p = st::Partition::make(e, nodes, per_node);
  if (!p || !(p.value().grid() == g)) why = "no global extent splits into subdomains of exactly " + std::to_string(o.extent) + "^3";
  return e;
}

template <int kBytes>
void add_quantities(st::DistributedDomain& d, int q) {
  for (int i = 0; i < q; ++i) d.add_quantity<Element<kBytes>>("q" + std::to_string(i));
}

int run(const Options& o, int me, int size) {
  // the nodes as the domain will see them (MPI_COMM_TYPE_SHARED, or
  // DTMPI_RANKS_PER_NODE), for the global extent
  std::vector<int> node_of;
  if (!topology::node_of_ranks(MPI_COMM_WORLD, static_cast<int>(runtime::config().ranks_per_node), node_of)) {
    if (me == 0) std::fprintf(stderr, "dtmpi-bench stencil: finding the nodes failed\n");
    return 1;
  }
  const int nodes = static_cast<int>(std::set<int>(node_of.begin(), node_of.end()).size());
  std::string why;
  const st::Dim3 extent = global_extent(o, nodes, size / nodes * o.per_rank, why);
  if (!why.empty()) {
    if (me == 0) std::fprintf(stderr, "dtmpi-bench stencil: %s\n", why.c_str());
    return 2;
  }
  // one domain per setting measured: CUDA graphs on the GPU (--graphs both:
  // off, then on), shared memory or messages on the host (--shm both: shared
  // memory, then messages)
  std::vector<int> settings{o.graphs};
  if (!o.gpu) settings = o.shm == kBoth ? std::vector<int>{1, 0} : std::vector<int>{o.shm};
  else if (o.graphs == kBoth) settings = {0, 1};
  std::vector<Row> rows;
  int64_t mine = 0, most = 0;
  double reference = 0;  // device domains: driver_strided_copy()
  for (int setting : settings) {
    st::DistributedDomain d(MPI_COMM_WORLD, extent);
    st::Radius radius = st::Radius::uniform(0);
    for (int a = 0; a < 3; ++a)
      if (o.axes.find("xyz"[a]) != std::string::npos) radius.set(a, o.radius, o.radius);
    d.set_radius(radius).set_periodic(true, true, true).set_subdomains_per_rank(o.per_rank).set_placement(o.placement);
    if (o.gpu) d.set_memory(st::Memory::kDevice).set_peer_path(o.path).set_gpus(gpus_of(o, me));
    if (o.gpu && setting >= 0) d.set_cuda_graphs(setting == 1);
    if (!o.gpu) d.set_host_shared_memory(setting == 1);
    switch (o.elem) {
      case 1: add_quantities<1>(d, o.quantities); break;
      case 2: add_quantities<2>(d, o.quantities); break;
      case 4: add_quantities<4>(d, o.quantities); break;
      case 8: add_quantities<8>(d, o.quantities); break;
      default: add_quantities<16>(d, o.quantities); break;
    }
    d.realize();
    const int64_t wrong = check_one_exchange(o, d);
    int64_t worst = 0;
    MPI_Allreduce(&wrong, &worst, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (worst != 0) {
      if (me == 0) std::fprintf(stderr, "dtmpi-bench stencil: the checked exchange left %s ghost bytes wrong\n",
                                worst < 0 ? "(a copy failed)" : std::to_string(worst).c_str());
      return 1;
    }
    const st::ExchangeStats x = d.stats();
    mine = x.mpi_bytes + x.shm_bytes + x.local_bytes;
    MPI_Allreduce(&mine, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    Row row;
    if (o.gpu) row.label = std::string("dtmpi::stencil exchange()") + (d.cuda_graphs() ? ", CUDA graphs" : ", no graphs");
    else
      row.label = std::string("dtmpi::stencil exchange(), ") +
                  (setting == 0 ? "messages" : x.shm_bytes > 0 ? "shared memory" : "shm (no node peer)");
    row.exchange = slowest_median(o, [&] { d.exchange(); });
    if (!o.gpu && o.overlap && o.elem == 8) {
      ones(o, d);
      row.compute = slowest_median(o, [&] { interior_compute(o, d, [] {}); });
      int planes = 0;
      row.overlapped = slowest_median(o, [&] {
        d.start_exchange();
        interior_compute(o, d, [&] {
          if (o.progress > 0 && ++planes % o.progress == 0) d.progress();
        });
        d.finish_exchange();
      });
    }
    rows.push_back(row);
    if (o.gpu && rows.size() == 1) reference = stencil_driver_strided_copy(d, radius, o.quantities, o.elem, timer(o));
    if (me == 0 && rows.size() == 1) {
      std::printf("dtmpi-bench stencil: %d rank(s), %d node(s); %d^3 per subdomain, %d per rank (%s of %s); radius %d "
                  "along %s, %d quantities of %d B; %s memory, messages %s\n",
                  size, nodes, o.extent, o.per_rank, text(d.grid()).c_str(), text(extent).c_str(), o.radius,
                  o.axes.c_str(),
                  o.quantities, o.elem, o.gpu ? "device" : "host", st::to_string(x.peer_path));
      std::printf("  %s\n", d.describe().c_str());
      std::printf("  halo bytes per exchange (busiest rank): %lld (rank 0: %lld in %lld message(s), %lld in shared "
                  "memory, %lld copied locally)\n", static_cast<long long>(most), static_cast<long long>(x.mpi_bytes),
                  static_cast<long long>(x.messages), static_cast<long long>(x.shm_bytes),
                  static_cast<long long>(x.local_bytes));
    }
  }
  std::string how;
  const double lim = stencil_contiguous_limit(o.gpu, mine, how, timer(o));
  if (me == 0) {
    std::printf("  %-44s %12s %10s %9s\n", "per exchange (slowest rank, median)", "ms", "GB/s", "x limit");
    for (const Row& row : rows) {
      const double t = row.exchange;
      std::printf("  %-44s %12.4f %10.2f %8.2fx\n", row.label.c_str(), 1e3 * t, t > 0 ? most / t / 1e9 : 0.0,
                  lim > 0 ? t / lim : 0.0);
    }
    std::printf("  %-44s %12.4f %10.2f\n", ("limit: one " + how).c_str(), 1e3 * lim, lim > 0 ? most / lim / 1e9 : 0.0);
    if (o.gpu)
      std::printf("  %-44s %12.4f %10.2f %8.2fx   (the same boxes within each subdomain, 1 graph; 0: failed)\n",
                  "reference: driver's strided copy (Memcpy3D)", 1e3 * reference,
                  reference > 0 ? most / reference / 1e9 : 0.0, lim > 0 ? reference / lim : 0.0);
    std::printf("  (%d samples of %d exchanges; one exchange checked: every ghost right)\n", o.samples, o.iters);
    if (rows.front().compute > 0) {
      std::printf("\n  overlap: interior compute = radius-%d star (%d points) over interior() of %d quantities, "
                  "progress() %s\n", o.radius, 6 * o.radius + 1, o.quantities,
                  o.progress == 0 ? "never" : ("every " + std::to_string(o.progress) + " plane(s)").c_str());
      std::printf("  %-14s %12s %12s %16s %8s\n", "peers of node", "exchange ms", "compute ms", "start+comp+fin ms",
                  "hidden");
      for (const Row& row : rows) {
        const double hidden = (row.exchange + row.compute - row.overlapped) / row.exchange;
        std::printf("  %-14s %12.4f %12.4f %16.4f %7.0f%%\n",
                    row.label.substr(row.label.rfind(", ") + 2).c_str(), 1e3 * row.exchange, 1e3 * row.compute,
                    1e3 * row.overlapped, 100 * hidden);
      }
    } else if (!o.gpu && o.overlap) {
      std::printf("  (overlap measured with 8-byte elements only: --elem 8)\n");
    } else if (o.gpu) {
      std::printf("  (overlap: host memory only; on the GPU the interior is the program's kernel: heat3d --gpu --overlap)\n");
    }
  }
  // the plain-MPI halo of the same block, where it is the same exchange
  const std::string sz = std::to_string(o.extent), r = std::to_string(o.radius), q = std::to_string(o.quantities),
                    it = std::to_string(o.iters), pitch = o.gpu ? "512" : "64";
  std::vector<std::string> args{"halo", "--size", sz, "--radius", r, "--quantities", q, "--pitch", pitch, "--iters", it,
                                "--only", "isend"};
  if (o.gpu) args.push_back("--gpu");
  std::string cmd = "mpiexec -n " + std::to_string(size) + " dtmpi-bench";
  for (const auto& a : args) cmd += " " + a;
  if (o.halo && o.per_rank == 1 && o.elem == 8 && o.axes == "xyz") {
    if (me == 0) std::printf("\nplain MPI, the same block: %s\n", cmd.c_str());
    std::fflush(stdout);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return bench_halo(static_cast<int>(args.size()), argv.data());
  }
  if (me == 0)
    std::printf("\nplain MPI halo to compare%s: %s\n",
                o.per_rank == 1 && o.elem == 8 ? "" : " (1 subdomain per rank of 8-byte elements there)", cmd.c_str());
  return 0;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto num = [&](int& v) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      const long x = std::strtol(argv[++i], &end, 10);
      v = static_cast<int>(x);
      return *end == 0 && x > 0 && x < (1 << 20);
    };
    bool ok = true;
    if (a == "--gpu") o.gpu = true;
    else if (a == "--no-placement") o.placement = false;
    else if (a == "--no-overlap") o.overlap = false;
    else if (a == "--no-halo") o.halo = false;
    else if (a == "--extent") ok = num(o.extent);
    else if (a == "--radius") ok = num(o.radius);
    else if (a == "--axes" && i + 1 < argc) {
      // a non-empty subset of x, y, z, each once
      o.axes = argv[++i];
      ok = !o.axes.empty() && o.axes.size() <= 3 &&
           std::all_of(o.axes.begin(), o.axes.end(), [&](char c) {
             return (c == 'x' || c == 'y' || c == 'z') && std::count(o.axes.begin(), o.axes.end(), c) == 1;
           });
    }
    else if (a == "--quantities") ok = num(o.quantities);
    else if (a == "--elem") ok = num(o.elem) && (o.elem == 1 || o.elem == 2 || o.elem == 4 || o.elem == 8 || o.elem == 16);
    else if (a == "--per-rank") ok = num(o.per_rank);
    else if (a == "--gpus") ok = num(o.gpus);
    else if (a == "--iters") ok = num(o.iters);
    else if (a == "--samples") ok = num(o.samples);
    else if (a == "--progress" && i + 1 < argc) {
      char* end = nullptr;
      const long x = std::strtol(argv[++i], &end, 10);
      o.progress = static_cast<int>(x);
      ok = *end == 0 && x >= 0 && x < (1 << 20);
    }
    else if (a == "--path" && i + 1 < argc) {
      const std::string p = argv[++i];
      o.path = p == "auto" ? st::PeerPath::kAuto : p == "staged" ? st::PeerPath::kStaged : st::PeerPath::kDevice;
      ok = p == "auto" || p == "staged" || p == "device";
    } else if (a == "--graphs" && i + 1 < argc) {
      const std::string g = argv[++i];
      o.graphs = g == "on" ? 1 : g == "off" ? 0 : kBoth;
      ok = g == "on" || g == "off" || g == "both";
    } else if (a == "--shm" && i + 1 < argc) {
      const std::string g = argv[++i];
      o.shm = g == "on" ? 1 : g == "off" ? 0 : kBoth;
      ok = g == "on" || g == "off" || g == "both";
    } else ok = false;
    if (!ok) {
      std::fprintf(stderr, "dtmpi-bench stencil: bad option '%s' (dtmpi-bench --help)\n", a.c_str());
      return false;
    }
  }
  if (o.extent == 0) o.extent = o.gpu ? 256 : 32;
  return true;
}

}  // namespace

int bench_stencil(int argc, char** argv) {
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  if (!parse(argc, argv, o)) return 2;
  if (o.gpu) {
    int have = 0;
#ifdef DTMPI_BENCH_GPU
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local = 0, count = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0 && cudaSetDevice(local % count) == cudaSuccess) have = 1;
    cudaGetLastError();
#endif
    int all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {  // CTest's SKIP_RETURN_CODE: skipped, not passed
      if (me == 0) std::printf("dtmpi-bench stencil: --gpu but no usable GPU (or no CUDA in this build): skipped\n");
      return 77;
    }
  }
  try {
    return run(o, me, size);
  } catch (const st::StencilError& e) {
    std::fprintf(stderr, "dtmpi-bench stencil (rank %d): %s\n", me, e.what());
    return 1;
  }
}

}  // namespace dtmpi::bench
