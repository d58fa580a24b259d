// Commit cost: creating, committing and freeing derived datatypes with the
// system MPI alone (PMPI_Type_commit, PMPI_Type_free) and through dtmpi
// (MPI_Type_commit, MPI_Type_free), in the same run, interleaved, median per
// type over the samples. A third column adds the first plan lookup after the
// commit (what the first call dtmpi serves with the type pays for its plan),
// so the cost of translating a type is visible wherever it is paid.
//
// The darray cases are what each of 72 processes commits for its own block
// (the issue that asked for this: many darray commits on 72 processes took 7.6 s
// with the system MPI and 15.7 s with dtmpi); every sample cycles through all
// 72 ranks' types.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "timing.hpp"
#include "type/registry.hpp"

namespace dtmpi::bench {

namespace {

struct Case {
  std::string name;
  int variants;                                  // make(i) for i in [0, variants)
  std::function<MPI_Datatype(int)> make;         // an uncommitted type, built with PMPI_*
};

Case darray(const std::string& name, std::vector<int> gsizes, std::vector<int> distribs, std::vector<int> dargs,
            std::vector<int> psizes, int order = MPI_ORDER_C) {
  int procs = 1;
  for (int p : psizes) procs *= p;
  return Case{name, procs, [=](int rank) {
                MPI_Datatype t;
                PMPI_Type_create_darray(procs, rank, static_cast<int>(gsizes.size()), gsizes.data(), distribs.data(),
                                        dargs.data(), psizes.data(), order, MPI_DOUBLE, &t);
                return t;
              }};
}

std::vector<Case> cases(bool quick) {
  const int B = MPI_DISTRIBUTE_BLOCK, C = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE,
            D = MPI_DISTRIBUTE_DFLT_DARG;
  std::vector<Case> v;
  v.push_back(darray("darray 2D block,block 1024^2 on 8x9", {1024, 1024}, {B, B}, {D, D}, {8, 9}));
  v.push_back(darray("darray 2D cyclic,cyclic 1024^2 on 8x9", {1024, 1024}, {C, C}, {D, D}, {8, 9}));
  v.push_back(darray("darray 2D cyclic(4),block 1024^2 on 8x9", {1024, 1024}, {C, B}, {4, D}, {8, 9}));
  v.push_back(darray("darray 2D block,cyclic(8) Fortran on 9x8", {1000, 1200}, {B, C}, {D, 8}, {9, 8},
                     MPI_ORDER_FORTRAN));
  v.push_back(darray("darray 3D block 120x128x144 on 3x4x6", {120, 128, 144}, {B, B, B}, {D, D, D}, {3, 4, 6}));
  v.push_back(darray("darray 3D cyclic(2),block,none on 6x12x1", {96, 96, 96}, {C, B, N}, {2, D, D}, {6, 12, 1}));
  if (!quick)
    v.push_back(darray("darray 3D cyclic 64^3 on 4x3x6", {64, 64, 64}, {C, C, C}, {D, D, D}, {4, 3, 6}));
  // the 26 halo regions of a 64^3 block with radius 3, 8 quantities
  v.push_back(Case{"subarray 4D halo regions 70^3 x 8", 26, [](int i) {
                     const int k = i < 13 ? i : i + 1;  // skip the centre
                     int sizes[4] = {70, 70, 70, 8}, sub[4], start[4];
                     for (int d = 0, x = k; d < 3; ++d, x /= 3) {
                       const int side = x % 3;  // low halo, interior, high halo
                       sub[d] = side == 1 ? 64 : 3;
                       start[d] = side == 0 ? 0 : side == 1 ? 3 : 67;
                     }
                     sub[3] = 8, start[3] = 0;
                     MPI_Datatype t;
                     PMPI_Type_create_subarray(4, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t);
                     return t;
                   }});
  v.push_back(Case{"subarray 2D tiles of 4096^2", 64, [](int i) {
                     int sizes[2] = {4096, 4096}, sub[2] = {512, 512}, start[2] = {512 * (i / 8), 512 * (i % 8)};
                     MPI_Datatype t;
                     PMPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_FLOAT, &t);
                     return t;
                   }});
  v.push_back(Case{"struct {d,i,i,c} resized", 1, [](int) {
                     int bl[3] = {1, 2, 1};
                     MPI_Aint d[3] = {0, 8, 16};
                     MPI_Datatype ty[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR}, s, t;
                     PMPI_Type_create_struct(3, bl, d, ty, &s);
                     PMPI_Type_create_resized(s, 0, 24, &t);
                     PMPI_Type_free(&s);
                     return t;
                   }});
  v.push_back(Case{"struct of 16 fields with vector members", 4, [](int i) {
                     MPI_Datatype vec;
                     PMPI_Type_vector(3 + i, 1, 4, MPI_FLOAT, &vec);
                     int bl[16];
                     MPI_Aint d[16];
                     MPI_Datatype ty[16];
                     for (int f = 0; f < 16; ++f) {
                       bl[f] = 1 + f % 3;
                       d[f] = 64 * f;
                       ty[f] = f % 4 == 0 ? vec : f % 4 == 1 ? MPI_DOUBLE : f % 4 == 2 ? MPI_INT : MPI_CHAR;
                     }
                     MPI_Datatype t;
                     PMPI_Type_create_struct(16, bl, d, ty, &t);
                     PMPI_Type_free(&vec);
                     return t;
                   }});
  return v;
}

}  // namespace

int bench_commit(int argc, char** argv) {
  bool quick = false;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
  }
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me != 0) return 0;
  std::printf("create + commit + free, median per type (us): the system MPI alone, through dtmpi, and through\n"
              "dtmpi with the first plan lookup after the commit\n");
  std::printf("%-44s %9s %9s %7s %12s %7s\n", "case", "system", "dtmpi", "ratio", "+first use", "ratio");
  std::vector<double> ratios;
  for (const auto& c : cases(quick)) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    // each op commits every variant once, so all 72 ranks' darrays are in every sample
    auto sys = [&] {
      for (int i = 0; i < c.variants; ++i) {
        MPI_Datatype t = c.make(i);
        PMPI_Type_commit(&t);
        PMPI_Type_free(&t);
      }
    };
    auto ours = [&] {
      for (int i = 0; i < c.variants; ++i) {
        MPI_Datatype t = c.make(i);
        MPI_Type_commit(&t);
        MPI_Type_free(&t);
      }
    };
    auto used = [&] {
      for (int i = 0; i < c.variants; ++i) {
        MPI_Datatype t = c.make(i);
        MPI_Type_commit(&t);
        (void)type::find_plan(t);
        MPI_Type_free(&t);
      }
    };
    auto t = time_interleaved({sys, ours, used}, quick ? 0.02 : 0.05, quick ? 5 : 9);
    const double n = c.variants;
    const double s_us = 1e6 * t[0].median_s / n, o_us = 1e6 * t[1].median_s / n, u_us = 1e6 * t[2].median_s / n;
    std::printf("%-44s %9.2f %9.2f %6.2fx %12.2f %6.2fx\n", c.name.c_str(), s_us, o_us, o_us / s_us, u_us,
                u_us / s_us);
    std::fflush(stdout);
    ratios.push_back(o_us / s_us);
  }
  if (!ratios.empty()) {
    double log_sum = 0;
    for (double r : ratios) log_sum += std::log(r);
    std::printf("\nsummary: commit through dtmpi / system MPI: geometric mean %.2fx, worst %.2fx over %zu cases\n",
                std::exp(log_sum / static_cast<double>(ratios.size())), *std::max_element(ratios.begin(), ratios.end()),
                ratios.size());
  }
  return 0;
}

}  // namespace dtmpi::bench
