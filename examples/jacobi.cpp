// The complete example of docs/stencil.md: a 7-point Jacobi smoother on a
// periodic 64^3 grid of doubles, the interior computed while the halo
// travels. The smoother conserves the sum of u (exit 1 if it does not).
#include <mpi.h>

#include <cmath>
#include <cstdio>

#include "dtmpi/stencil.hpp"

namespace st = dtmpi::stencil;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    st::DistributedDomain domain(MPI_COMM_WORLD, {64, 64, 64});
    domain.set_radius(1);                      // one ghost layer on every side
    domain.set_periodic(true, true, true);
    auto u = domain.add_quantity<double>("u");
    domain.realize();                          // collective: partition, allocate, plan

    for (st::Subdomain& s : domain.subdomains()) {  // initial values by global coordinate
      auto cur = s.current(u);
      const st::Box b = s.box();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x) cur(x, y, z) = (x == 32 && y == 32 && z == 32) ? 1.0 : 0.0;
    }
    auto smooth = [&](const st::Subdomain& s, const st::Box& b) {
      auto in = s.current(u);
      auto out = s.next(u);
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x)
            out(x, y, z) = (in(x - 1, y, z) + in(x + 1, y, z) + in(x, y - 1, z) + in(x, y + 1, z) +
                            in(x, y, z - 1) + in(x, y, z + 1)) / 6.0;
    };
    for (int step = 0; step < 100; ++step) {
      domain.start_exchange();                             // ghosts of current() on their way
      for (auto& s : domain.subdomains()) smooth(s, s.interior());
      domain.finish_exchange();                            // ghosts filled
      for (auto& s : domain.subdomains())
        for (const st::Box& b : s.exterior()) smooth(s, b);
      domain.swap();                                       // next() becomes current()
    }
    double local = 0, total = 0;
    for (auto& s : domain.subdomains()) {
      auto cur = s.current(u);
      const st::Box b = s.box();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x) local += cur(x, y, z);
    }
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::printf("sum after 100 steps: %.12f (the smoother conserves it: 1)\n", total);
    rc = std::fabs(total - 1.0) < 1e-9 ? 0 : 1;
  } catch (const st::StencilError& e) {  // bad input: every rank gets the same message
    std::fprintf(stderr, "%s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
