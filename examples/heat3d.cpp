// A 3D heat-equation solver on dtmpi::stencil: explicit Euler steps of
// u' = alpha * laplacian(u) on a periodic grid, the Laplacian a central
// difference of radius 1, 2 or 3 (2nd, 4th, 6th order), for 1-8
// independent quantities. Each quantity starts as a product of sines, an
// eigenfunction of the discrete Laplacian, so after S steps the exact
// discrete answer is (1 + alpha * lambda)^S times the start: the program
// checks every point against it and fails (exit 1) past a 1e-9 relative error.
//
//   heat3d [--n X Y Z] [--radius 1|2|3] [--quantities Q] [--steps S]
//          [--substeps K] [--per-rank P] [--overlap] [--gpu] [--bench N] [--quiet]
//          [--path auto|staged|device] [--flops F]
//
// --flops F (GPU): F more multiply-adds per point in the update, each
// v * 1 + 0 (exact): an interior of the arithmetic intensity of a
// richer physics kernel than a Laplacian, to measure how much of the
// exchange an overlapped step hides behind compute-bound work (a Laplacian
// alone is bound by memory, as the exchange is).
//
// --path: how a GPU domain's messages to other ranks travel (st::PeerPath;
// default auto: the device path where dtmpi is the MPI in front, e.g.
// LD_PRELOAD=libdtmpi.so, else staged through pinned host memory).
//
// --bench N: after the check, N exchanges alone, timed (the halo bytes per
// exchange over that time; the slowest rank's time).
//
// --substeps 3 with --quantities 8 --radius 3 is the Astaroth pattern (RK3:
// three exchanges and three updates per step, 8 doubles, radius 3): the
// proxy benchmark of scripts/gpu-check.sh `stencil`.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dtmpi/stencil.hpp"
#ifdef HEAT_CUDA
#include "heat_kernels.hpp"
#endif

namespace st = dtmpi::stencil;

namespace {

struct Options {
  st::Dim3 n{48, 40, 36};
  int radius = 1, quantities = 1, steps = 20, substeps = 1, per_rank = 1, bench = 0, flops = 0;
  bool overlap = false, gpu = false, quiet = false;
  st::PeerPath path = st::PeerPath::kAuto;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto num = [&](int64_t& v) {
      if (i + 1 >= argc) return false;
      v = std::atoll(argv[++i]);
      return true;
    };
    int64_t v = 0;
    if (a == "--n" && i + 3 < argc) {
      o.n = {std::atoll(argv[i + 1]), std::atoll(argv[i + 2]), std::atoll(argv[i + 3])};
      i += 3;
    } else if (a == "--radius" && num(v)) o.radius = static_cast<int>(v);
    else if (a == "--quantities" && num(v)) o.quantities = static_cast<int>(v);
    else if (a == "--steps" && num(v)) o.steps = static_cast<int>(v);
    else if (a == "--substeps" && num(v)) o.substeps = static_cast<int>(v);
    else if (a == "--per-rank" && num(v)) o.per_rank = static_cast<int>(v);
    else if (a == "--bench" && num(v)) o.bench = static_cast<int>(v);
    else if (a == "--flops" && num(v)) o.flops = static_cast<int>(v);
    else if (a == "--path" && i + 1 < argc) {
      const std::string p = argv[++i];
      if (p == "auto") o.path = st::PeerPath::kAuto;
      else if (p == "staged") o.path = st::PeerPath::kStaged;
      else if (p == "device") o.path = st::PeerPath::kDevice;
      else return false;
    } else if (a == "--overlap") o.overlap = true;
    else if (a == "--gpu") o.gpu = true;
    else if (a == "--quiet") o.quiet = true;
    else return false;
  }
  return o.radius >= 1 && o.radius <= 3 && o.quantities >= 1 && o.steps >= 0 && o.substeps >= 1 && o.bench >= 0 && o.flops >= 0;
}

// Second-difference weights, centre first (2nd, 4th and 6th order).
std::vector<double> weights(int r) {
  if (r == 1) return {-2.0, 1.0};
  if (r == 2) return {-5.0 / 2, 4.0 / 3, -1.0 / 12};
  return {-49.0 / 18, 3.0 / 2, -3.0 / 20, 1.0 / 90};
}

constexpr double kPi = 3.14159265358979323846;
constexpr double kAlpha = 0.05;

// Quantity q: sin(2 pi m_a p_a / N_a + phase) along each axis.
struct Mode {
  int m[3];
  double phase[3];
};
Mode mode(int q) { return {{1 + q % 2, 1 + (q / 2) % 2, 1 + (q / 4) % 2}, {0.3 * q, 0.7 + 0.2 * q, 1.1 - 0.1 * q}}; }
double initial(const Mode& md, const st::Dim3& n, const st::Dim3& p) {
  double v = 1;
  for (int a = 0; a < 3; ++a) v *= std::sin(2 * kPi * md.m[a] * static_cast<double>(p[a]) / static_cast<double>(n[a]) + md.phase[a]);
  return v;
}
// The discrete Laplacian's eigenvalue for that mode.
double eigenvalue(const Mode& md, const st::Dim3& n, const std::vector<double>& w) {
  double l = 0;
  for (int a = 0; a < 3; ++a) {
    l += w[0];
    for (size_t k = 1; k < w.size(); ++k)
      l += 2 * w[k] * std::cos(2 * kPi * md.m[a] * static_cast<double>(k) / static_cast<double>(n[a]));
  }
  return l;
}

void update_host(const st::Subdomain& s, st::Quantity<double> q, const st::Box& b, const std::vector<double>& w) {
  const auto in = s.current(q);
  const auto out = s.next(q);
  const int r = static_cast<int>(w.size()) - 1;
  for (int64_t z = b.lo.z; z < b.hi.z; ++z)
    for (int64_t y = b.lo.y; y < b.hi.y; ++y)
      for (int64_t x = b.lo.x; x < b.hi.x; ++x) {
        const double c = in(x, y, z);
        double lap = 3 * w[0] * c;
        for (int k = 1; k <= r; ++k)
          lap += w[static_cast<size_t>(k)] * (in(x - k, y, z) + in(x + k, y, z) + in(x, y - k, z) + in(x, y + k, z) +
                                              in(x, y, z - k) + in(x, y, z + k));
        out(x, y, z) = c + kAlpha * lap;
      }
}

#ifdef HEAT_CUDA
void update_device(const st::Subdomain& s, int q, const st::Box& b, const std::vector<double>& w, int flops) {
  heat::UpdateArgs a;
  a.in = static_cast<const char*>(s.current_data(q));
  a.out = static_cast<char*>(s.next_data(q));
  a.pitch = s.pitch(q);
  a.slice = s.pitch(q) * s.allocated().size().y;
  for (int ax = 0; ax < 3; ++ax) {
    a.lo[ax] = b.lo[ax] - s.allocated().lo[ax];
    a.hi[ax] = b.hi[ax] - s.allocated().lo[ax];
  }
  a.radius = static_cast<int>(w.size()) - 1;
  for (size_t k = 0; k < w.size(); ++k) a.coef[k] = w[k];
  a.alpha = kAlpha;
  a.flops = flops;
  if (heat::launch_update(a, heat::compute_stream()) != 0) throw st::StencilError("heat3d: the update kernel failed to launch");
}
#endif

// The whole allocation of quantity q, as host doubles (a copy for device domains).
std::vector<char> download(const st::Subdomain& s, int q, bool gpu) {
  const int64_t bytes = s.pitch(q) * s.allocated().size().y * s.allocated().size().z;
  std::vector<char> img(static_cast<size_t>(bytes));
#ifdef HEAT_CUDA
  if (gpu) {
    if (heat::copy(img.data(), s.current_data(q), bytes) != 0) throw st::StencilError("heat3d: cudaMemcpy failed");
    return img;
  }
#endif
  (void)gpu;
  std::memcpy(img.data(), s.current_data(q), static_cast<size_t>(bytes));
  return img;
}
void upload(const st::Subdomain& s, int q, const std::vector<char>& img, bool gpu) {
#ifdef HEAT_CUDA
  if (gpu) {
    if (heat::copy(s.current_data(q), img.data(), static_cast<int64_t>(img.size())) != 0)
      throw st::StencilError("heat3d: cudaMemcpy failed");
    return;
  }
#endif
  (void)gpu;
  std::memcpy(s.current_data(q), img.data(), img.size());
}
double& point(std::vector<char>& img, const st::Subdomain& s, int q, const st::Dim3& p) {
  const st::Box a = s.allocated();
  return *reinterpret_cast<double*>(img.data() + ((p.z - a.lo.z) * a.size().y + (p.y - a.lo.y)) * s.pitch(q) +
                                    (p.x - a.lo.x) * 8);
}

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int run(const Options& o, int rank, int size) {
  st::DistributedDomain d(MPI_COMM_WORLD, o.n);
  d.set_radius(o.radius).set_subdomains_per_rank(o.per_rank);
  if (o.gpu) d.set_memory(st::Memory::kDevice);
  d.set_peer_path(o.path);  // realize() refuses device on host memory, or without dtmpi in front
  std::vector<st::Quantity<double>> qs;
  for (int q = 0; q < o.quantities; ++q) qs.push_back(d.add_quantity<double>("u" + std::to_string(q)));
  d.realize();
  const std::vector<double> w = weights(o.radius);
  if (rank == 0 && !o.quiet)
    std::printf("heat3d: %lldx%lldx%lld points, radius %d, %d quantit%s, %d ranks x %d subdomains (grid %lldx%lldx%lld), "
                "%s memory (peer path %s), %d steps x %d exchanges%s, %d more flops a point\n",
                static_cast<long long>(o.n.x), static_cast<long long>(o.n.y), static_cast<long long>(o.n.z), o.radius,
                o.quantities, o.quantities == 1 ? "y" : "ies", size, o.per_rank, static_cast<long long>(d.grid().x),
                static_cast<long long>(d.grid().y), static_cast<long long>(d.grid().z), o.gpu ? "device" : "host",
                st::to_string(d.stats().peer_path), o.steps, o.substeps, o.overlap ? ", interior overlapped with the exchange" : "",
                o.gpu ? o.flops : 0);
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < o.quantities; ++q) {
      std::vector<char> img = download(s, q, o.gpu);
      const st::Box b = s.box();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x) point(img, s, q, {x, y, z}) = initial(mode(q), o.n, {x, y, z});
      upload(s, q, img, o.gpu);
    }
#ifdef HEAT_CUDA
  if (o.gpu) {
    // the uploads (cudaMemcpy from pageable memory, on the legacy stream)
    // may return before the device is written; the updates and the
    // exchange's packs run on non-blocking streams, ordered after nothing
    if (heat::synchronize_device() != 0) throw st::StencilError("heat3d: the initial upload failed");
    if (!heat::compute_stream()) throw st::StencilError("heat3d: no CUDA stream for the updates");
  }
#endif
  auto update = [&](const st::Subdomain& s, const st::Box& b) {
    for (int q = 0; q < o.quantities; ++q) {
#ifdef HEAT_CUDA
      if (o.gpu) {
        update_device(s, q, b, w, o.flops);
        continue;
      }
#endif
      update_host(s, qs[static_cast<size_t>(q)], b, w);
    }
  };
  double exchange_s = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = seconds();
  const int total = o.steps * o.substeps;
  for (int i = 0; i < total; ++i) {
    const double e0 = seconds();
    if (o.overlap) {
      d.start_exchange();
      exchange_s += seconds() - e0;
      for (const st::Subdomain& s : d.subdomains()) {
        update(s, s.interior());
        d.progress();
      }
      const double e1 = seconds();
      d.finish_exchange();
      exchange_s += seconds() - e1;
      for (const st::Subdomain& s : d.subdomains())
        for (const st::Box& b : s.exterior()) update(s, b);
    } else {
      d.exchange();
      exchange_s += seconds() - e0;
      for (const st::Subdomain& s : d.subdomains()) update(s, s.box());
    }
#ifdef HEAT_CUDA
    // the next exchange packs current() on the library's stream: the updates first
    if (o.gpu && heat::synchronize(heat::compute_stream()) != 0) throw st::StencilError("heat3d: the update kernel failed");
#endif
    d.swap();
    const int step = (i + 1) / o.substeps, every = std::max(1, o.steps / 10);
    if (rank == 0 && !o.quiet && (i + 1) % o.substeps == 0 && step % every == 0)
      std::printf("  step %d/%d (%.0f%%), %.3f s\n", step, o.steps, 100.0 * step / o.steps, seconds() - t0);
  }
  const double elapsed = seconds() - t0;
  // the check: every point against the exact discrete answer
  double worst = 0;
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < o.quantities; ++q) {
      std::vector<char> img = download(s, q, o.gpu);
      const double g = std::pow(1 + kAlpha * eigenvalue(mode(q), o.n, w), total);
      const st::Box b = s.box();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x)
            worst = std::max(worst, std::fabs(point(img, s, q, {x, y, z}) - g * initial(mode(q), o.n, {x, y, z})) /
                                        std::max(std::fabs(g), 1e-300));
    }
  double worst_all = 0, exchange_max = 0;
  MPI_Allreduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&exchange_s, &exchange_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const bool ok = worst_all < 1e-9;
  if (rank == 0) {
    const st::ExchangeStats x = d.stats();
    std::printf("heat3d: %s: max relative error %.3g against the exact discrete solution\n", ok ? "PASSED" : "FAILED",
                worst_all);
    std::printf("heat3d: %.4f s total, %.3f ms per step, exchange %.3f ms per step (%d exchanges; rank 0: %lld MPI "
                "bytes in %lld messages + %lld bytes in shared memory + %lld bytes copied locally per exchange)\n",
                elapsed, 1e3 * elapsed / std::max(o.steps, 1), 1e3 * exchange_max / std::max(o.steps, 1), o.substeps,
                static_cast<long long>(x.mpi_bytes), static_cast<long long>(x.messages),
                static_cast<long long>(x.shm_bytes), static_cast<long long>(x.local_bytes));
  }
  if (o.bench > 0) {
    // seconds per run of `body` (once to warm, then o.bench times between a
    // barrier and the end), the slowest rank's
    auto timed = [&](auto&& body) {
      body();
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = seconds();
      for (int i = 0; i < o.bench; ++i) body();
      double mine = (seconds() - t0) / o.bench, worst = 0;
      MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return worst;
    };
    const double slowest = timed([&] { d.exchange(); });
    const st::ExchangeStats x = d.stats();
    int64_t bytes = x.mpi_bytes + x.shm_bytes + x.local_bytes, most = 0;
    MPI_Allreduce(&bytes, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    // the packed-bytes limit: the same messages between the same ranks, from
    // and into contiguous host buffers, nothing packed or copied
    std::vector<std::vector<char>> out, in;
    for (const st::PeerTraffic& p : x.by_peer) {
      out.emplace_back(static_cast<size_t>(p.send_bytes));
      in.emplace_back(static_cast<size_t>(p.recv_bytes));
    }
    std::vector<MPI_Request> req(2 * x.by_peer.size());
    auto limit_round = [&] {
      for (size_t i = 0; i < x.by_peer.size(); ++i) {
        MPI_Irecv(in[i].data(), static_cast<int>(in[i].size()), MPI_BYTE, x.by_peer[i].rank, 7, MPI_COMM_WORLD, &req[i]);
        MPI_Isend(out[i].data(), static_cast<int>(out[i].size()), MPI_BYTE, x.by_peer[i].rank, 7, MPI_COMM_WORLD,
                  &req[x.by_peer.size() + i]);
      }
      MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
    };
    const double lslowest = timed(limit_round);
    if (rank == 0) {
      std::printf("heat3d: exchange alone: %.3f ms per exchange (%d exchanges, slowest rank), %.2f GB/s of halo "
                  "bytes (%lld bytes per exchange on the busiest rank), peer path %s\n",
                  1e3 * slowest, o.bench, static_cast<double>(most) / slowest / 1e9, static_cast<long long>(most),
                  st::to_string(x.peer_path));
      std::printf("heat3d: packed-bytes limit (the same messages from contiguous host buffers, no packing or local "
                  "copies): %.3f ms, exchange / limit %.2fx\n", 1e3 * lslowest, lslowest > 0 ? slowest / lslowest : 0.0);
    }
    if (o.overlap) {
      // How much of the exchange the interior update hides (issue 23's
      // overlap target; dtmpi-bench stencil's host rows measure the same):
      // the interior update alone, the exchange alone, and the two together
      // (start, interior, finish); hidden = (interior + exchange -
      // together) / exchange. The updates write next() from current(), so
      // repeating them without swap() is the same work every time.
      auto settle = [&] {
#ifdef HEAT_CUDA
        if (o.gpu && heat::synchronize(heat::compute_stream()) != 0) throw st::StencilError("heat3d: the update kernel failed");
#endif
      };
      const double compute = timed([&] {
        for (const st::Subdomain& s : d.subdomains()) update(s, s.interior());
        settle();
      });
      const double overlapped = timed([&] {
        d.start_exchange();
        for (const st::Subdomain& s : d.subdomains()) {
          update(s, s.interior());
          d.progress();
        }
        d.finish_exchange();
        settle();
      });
      const st::ExchangeStats xs = d.stats();
      if (rank == 0)
        std::printf("heat3d: overlap: interior update alone %.3f ms, exchange alone %.3f ms, both overlapped %.3f ms: "
                    "%.0f%% of the exchange hidden (copies and unpacks of overlapped exchanges: %s%s)\n", 1e3 * compute,
                    1e3 * slowest, 1e3 * overlapped, 100 * (compute + slowest - overlapped) / slowest,
                    xs.overlap_blocks_per_sm > 0
                        ? (std::to_string(xs.overlap_blocks_per_sm) + " block(s) per SM").c_str()
                        : "full grid",
                    xs.deferred_sends > 0 ? "; packs beside the interior, sends after them" : "");
    }
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  int rc = 0;
  if (!parse(argc, argv, o)) {
    if (rank == 0)
      std::fprintf(stderr, "usage: heat3d [--n X Y Z] [--radius 1|2|3] [--quantities Q] [--steps S] [--substeps K] "
                           "[--per-rank P] [--overlap] [--gpu] [--bench N] [--quiet] [--path auto|staged|device] [--flops F]\n");
    rc = 2;
  } else {
    try {
#ifdef HEAT_CUDA
      if (o.gpu) {
        MPI_Comm node;
        int local = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        int have = heat::select_device(local) > 0 ? 1 : 0, all = 0;
        MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {  // CTest's SKIP_RETURN_CODE: skipped, not passed
          if (rank == 0) std::printf("heat3d: --gpu but no usable GPU: skipped\n");
          MPI_Finalize();
          return 77;
        }
      }
#endif
      rc = run(o, rank, size);
    } catch (const st::StencilError& e) {
      std::fprintf(stderr, "heat3d (rank %d): %s\n", rank, e.what());
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
