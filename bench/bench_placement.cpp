// dtmpi-bench placement [--quick]: topology-aware placement of 3D stencil
// rank grids (26 neighbours, periodic; weights: the halo bytes of a 256^3
// block with radius 3 -- faces, edges, corners), 8 to 3072 ranks at 1, 2, 4
// and 6 ranks per node, no MPI processes needed. Prints the inter-node edge
// weight of the default placement (rank r on node r / ranks-per-node), after
// dtmpi's partition, and of the best structured placement (the process grid
// tiled by node-sized boxes: the reference for the possible improvement), the
// share of that improvement reached, and the partitioner's time.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "topology/partition.hpp"

namespace dtmpi::bench {
namespace {

using Dims = std::array<int, 3>;

// The most cubic factorization of n (largest factor first, like MPI_Dims_create).
Dims dims_of(int n) {
  Dims best{n, 1, 1};
  for (int a = 1; a <= n; ++a) {
    if (n % a) continue;
    for (int b = 1; b <= n / a; ++b) {
      if ((n / a) % b) continue;
      Dims d{a, b, n / a / b};
      std::sort(d.rbegin(), d.rend());
      if (d[0] - d[2] < best[0] - best[2]) best = d;
    }
  }
  return best;
}

int rank_of(const Dims& d, int x, int y, int z) {
  x = (x + d[0]) % d[0];
  y = (y + d[1]) % d[1];
  z = (z + d[2]) % d[2];
  return (x * d[1] + y) * d[2] + z;  // row-major, like MPI_Cart_create
}

topology::Graph stencil(const Dims& d) {
  const int64_t side = 256, r = 3;
  std::vector<int> from, to;
  std::vector<int64_t> w;
  for (int x = 0; x < d[0]; ++x)
    for (int y = 0; y < d[1]; ++y)
      for (int z = 0; z < d[2]; ++z)
        for (int dx = -1; dx <= 1; ++dx)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dz = -1; dz <= 1; ++dz) {
              const int nz = (dx != 0) + (dy != 0) + (dz != 0);
              if (nz == 0) continue;
              const int64_t bytes = 8 * 8 * (nz == 1 ? side * side * r : nz == 2 ? side * r * r : r * r * r);
              from.push_back(rank_of(d, x, y, z));
              to.push_back(rank_of(d, x + dx, y + dy, z + dz));
              w.push_back(bytes);
            }
  // each directed send once; from_edges makes it symmetric (both directions add up)
  return topology::Graph::from_edges(d[0] * d[1] * d[2], from, to, w);
}

// Best tiling of the grid by boxes of `per` ranks: the structured reference.
int64_t best_tiling(const topology::Graph& g, const Dims& d, int per) {
  int64_t best = -1;
  for (int a = 1; a <= d[0]; ++a)
    for (int b = 1; b <= d[1]; ++b)
      for (int c = 1; c <= d[2]; ++c) {
        if (a * b * c != per || d[0] % a || d[1] % b || d[2] % c) continue;
        std::vector<int> group(static_cast<size_t>(g.n));
        for (int x = 0; x < d[0]; ++x)
          for (int y = 0; y < d[1]; ++y)
            for (int z = 0; z < d[2]; ++z)
              group[static_cast<size_t>(rank_of(d, x, y, z))] =
                  ((x / a) * (d[1] / b) + y / b) * (d[2] / c) + z / c;
        const int64_t cut = topology::cut_weight(g, group);
        if (best < 0 || cut < best) best = cut;
      }
  return best;
}

}  // namespace

int bench_placement(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  std::printf("partitioner: %s (+ exact balancing and swap refinement); weights in MB of halo per exchange\n",
              topology::have_metis() ? "METIS k-way" : "built-in greedy (no METIS at build time)");
  std::printf("%6s %10s %6s | %10s %10s %10s | %8s %9s\n", "ranks", "grid", "r/node", "default", "dtmpi",
              "best tile", "reached", "time ms");
  const int sizes[] = {8, 16, 64, 128, 256, 512, 1024, 2048, 3072};
  for (int n : sizes) {
    if (quick && n > 512) continue;
    const Dims d = dims_of(n);
    const auto g = stencil(d);
    for (int per : {1, 2, 4, 6}) {
      if (n % per) continue;
      std::vector<int> block(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) block[static_cast<size_t>(r)] = r / per;
      const int64_t before = topology::cut_weight(g, block);
      const auto t0 = std::chrono::steady_clock::now();
      auto part = topology::partition_equal(g, per);
      const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
      if (!part) {
        std::printf("%6d: %s\n", n, part.error().what.c_str());
        continue;
      }
      const int64_t after = topology::cut_weight(g, part.value());
      const int64_t ideal = best_tiling(g, d, per);
      const int64_t ref = ideal >= 0 ? std::min(ideal, after) : after;
      const double reached =
          before > ref ? 100.0 * static_cast<double>(before - after) / static_cast<double>(before - ref) : 100.0;
      char grid[32];
      std::snprintf(grid, sizeof grid, "%dx%dx%d", d[0], d[1], d[2]);
      char tile[32];
      if (ideal >= 0)
        std::snprintf(tile, sizeof tile, "%10.1f", static_cast<double>(ideal) / 1e6);
      else
        std::snprintf(tile, sizeof tile, "%10s", "-");
      std::printf("%6d %10s %6d | %10.1f %10.1f %s | %7.0f%% %9.2f\n", n, grid, per,
                  static_cast<double>(before) / 1e6, static_cast<double>(after) / 1e6, tile, reached, ms);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace dtmpi::bench
