// dtmpi-bench coll: Barrier, Bcast, Allreduce, Reduce, Allgather, Gather,
// Scatter, Alltoall, Reduce_scatter_block (rsb), Scan, Exscan and the v forms
// (equal counts) on
// MPI_COMM_WORLD, 8 B to 1 MiB (a rank's block for the data-moving ones): the
// system MPI's own (PMPI_*) against each of dtmpi's algorithms (src/coll,
// forced) and the "tuned" choice (dtmpi-tune's table under DTMPI_COLL=tuned,
// else the built-in one), in one run.
// Each cell is the time per call of back-to-back blocking calls (the slowest
// rank's), the median of interleaved samples (sample k of every variant
// before sample k+1 of any; each sample starts at the next variant, every
// other one runs backwards). The system MPI's call is timed twice in each
// sample, as two variants far apart in the order ("again"): their difference
// is the cell's own noise, and tuned counts as slower only where it is slower
// than both by more than 5% (the summary at the end).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "coll/coll.hpp"
#include "coll/system_ops.hpp"
#include "coll/tuning_table.hpp"
#include "timing.hpp"

namespace dtmpi::bench {

namespace {

using coll::Algorithm;
using coll::CollOpKind;

struct Variant {
  const char* name;
  Algorithm alg;
};

struct OpCase {
  const char* name;
  CollOpKind kind;
  std::vector<Variant> variants;  // dtmpi's algorithms
};

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> c = {
      {"barrier", CollOpKind::kBarrier,
       {{"dissem", Algorithm::kDissemination},
        {"flat", Algorithm::kFlat},
        {"knomial4", Algorithm::kKnomial4},
        {"knomial8", Algorithm::kKnomial8}}},
      {"bcast", CollOpKind::kBcast,
       {{"binomial", Algorithm::kBinomial}, {"flat", Algorithm::kFlat}, {"chain", Algorithm::kChain}}},
      {"allreduce", CollOpKind::kAllreduce,
       {{"recdbl", Algorithm::kRecursiveDoubling},
        {"rsag", Algorithm::kReduceScatterAllgather},
        {"tree", Algorithm::kTree},
        {"knomial4", Algorithm::kKnomial4},
        {"knomial8", Algorithm::kKnomial8},
        {"chain", Algorithm::kChain}}},
      {"reduce", CollOpKind::kReduce,
       {{"binomial", Algorithm::kBinomial},
        {"flat", Algorithm::kFlat},
        {"knomial4", Algorithm::kKnomial4},
        {"knomial8", Algorithm::kKnomial8}}},
      {"allgather", CollOpKind::kAllgather,
       {{"ring", Algorithm::kRing}, {"recdbl", Algorithm::kRecursiveDoubling}, {"flat", Algorithm::kFlat}}},
      {"gather", CollOpKind::kGather,
       {{"binomial", Algorithm::kBinomial},
        {"flat", Algorithm::kFlat},
        {"knomial4", Algorithm::kKnomial4},
        {"knomial8", Algorithm::kKnomial8}}},
      {"scatter", CollOpKind::kScatter,
       {{"binomial", Algorithm::kBinomial},
        {"flat", Algorithm::kFlat},
        {"knomial4", Algorithm::kKnomial4},
        {"knomial8", Algorithm::kKnomial8}}},
      {"alltoall", CollOpKind::kAlltoall,
       {{"pairwise", Algorithm::kPairwise}, {"flat", Algorithm::kFlat}, {"bruck", Algorithm::kBruck},
        {"bruck4", Algorithm::kBruck4}}},
      {"rsb", CollOpKind::kReduceScatterBlock, {{"flat", Algorithm::kFlat}}},
      {"scan", CollOpKind::kScan, {{"linear", Algorithm::kLinear}, {"recdbl", Algorithm::kRecursiveDoubling}}},
      {"exscan", CollOpKind::kExscan, {{"linear", Algorithm::kLinear}, {"recdbl", Algorithm::kRecursiveDoubling}}},
      // the v forms with equal counts; dtmpi's Gatherv, Scatterv and Alltoallv
      // include the agreement on the largest block their entries make
      {"allgatherv", CollOpKind::kAllgatherv,
       {{"ring", Algorithm::kRing}, {"recdbl", Algorithm::kRecursiveDoubling}, {"flat", Algorithm::kFlat}}},
      {"gatherv", CollOpKind::kGatherv, {{"flat", Algorithm::kFlat}}},
      {"scatterv", CollOpKind::kScatterv, {{"flat", Algorithm::kFlat}}},
      {"alltoallv", CollOpKind::kAlltoallv, {{"pairwise", Algorithm::kPairwise}, {"flat", Algorithm::kFlat}}},
      {"rs", CollOpKind::kReduceScatter, {{"flat", Algorithm::kFlat}}},
  };
  return c;
}

// The system MPI's call of `kind` (root 0, MPI_SUM on doubles).
void system_call(CollOpKind kind, const void* in, double* out, int count) {
  coll::system_collective(kind, in, out, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}

// Seconds per call of `call`, the slowest rank's, median of `samples`.
std::vector<double> time_all(const std::vector<std::function<void()>>& calls, int iters, int samples) {
  std::vector<std::vector<double>> t(calls.size());
  for (int s = 0; s < samples; ++s) {
    // each sample starts at another variant and every other sample runs
    // backwards, so that no variant is always timed right after the same one
    // (ranks leaving one of dtmpi's algorithms at different times, its
    // scratch in the caches)
    for (size_t k = 0; k < calls.size(); ++k) {
      const size_t n = calls.size(), step = s % 2 ? n - 1 - k : k;
      const size_t v = (step + static_cast<size_t>(s)) % n;
      // warm (and the first use of a communicator's state), a tenth of the timed calls
      for (int i = 0; i < std::max(1, iters / 10); ++i) calls[v]();
      PMPI_Barrier(MPI_COMM_WORLD);
      const double t0 = PMPI_Wtime();
      for (int i = 0; i < iters; ++i) calls[v]();
      double mine = (PMPI_Wtime() - t0) / iters, slowest = 0;
      PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t[v].push_back(slowest);
    }
  }
  std::vector<double> out;
  for (auto& v : t) out.push_back(median(v));
  return out;
}

}  // namespace

int bench_coll(int argc, char** argv) {
  bool quick = false, in_place = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--in-place") == 0) in_place = true;
    if (std::strcmp(argv[i], "--op") == 0 && i + 1 < argc) only = argv[++i];
  }
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int64_t max_bytes = quick ? (64 << 10) : (1 << 20);
  // n blocks: the side of a gather's root, an allgather's, an alltoall's, a reduce_scatter_block's input
  std::vector<double> in(static_cast<size_t>(n * max_bytes / 8) + 1, 1.0 + me), out(in.size(), 0.0);
  const int samples = quick ? 5 : 7;
  if (me == 0)
    std::printf("collectives on %d ranks, us per call (back-to-back blocking calls, the slowest rank, median of "
                "%d samples); ratio = system / variant (> 1: faster than the system MPI); again = the system's call "
                "timed a second time in the same samples (its spread is the cell's noise)%s\n",
                n, samples, in_place ? "; every call MPI_IN_PLACE (its input in the result buffer)" : "");
  int cells = 0, faster = 0, slower = 0;
  std::string slower_cells;
  for (const OpCase& oc : op_cases()) {
    if (!only.empty() && only != oc.name) continue;
    if (in_place && !coll::in_place_keyed(oc.kind)) continue;
    if (me == 0) {
      std::printf("\n%-9s %8s %9s", oc.name, "bytes", "system");
      for (const auto& v : oc.variants) std::printf(" %9s %6s", v.name, "ratio");
      std::printf(" %9s %6s %9s  tuned picks\n", "tuned", "ratio", "again");
    }
    for (int64_t bytes = 8; bytes <= max_bytes; bytes *= (quick ? 8 : 4)) {
      if (oc.kind == CollOpKind::kBarrier && bytes > 8) break;
      const int count = static_cast<int>(bytes / 8);
      const CollOpKind kind = oc.kind;
      // in place, each call's input is what the one before left in `out`
      // (the values change from call to call, the time does not)
      const void* input = in_place ? MPI_IN_PLACE : static_cast<const void*>(in.data());
      std::vector<std::function<void()>> calls;
      calls.push_back([&, kind, count, input] { system_call(kind, input, out.data(), count); });
      auto forced = [&, kind, count, input](Algorithm a) {
        return [&, kind, count, input, a] {
          auto r = coll::run_forced(kind, a, input, out.data(), count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
          if (!r || !r.value()) system_call(kind, input, out.data(), count);
        };
      };
      for (const auto& v : oc.variants) calls.push_back(forced(v.alg));
      // "tuned": DTMPI_COLL's choice where it is set (=tuned: dtmpi-tune's
      // table, read at MPI_Init), the built-in one otherwise; in place, the
      // table's in-place entries (these operations agree on nothing first)
      const Algorithm pick = !coll::enabled() ? coll::select_builtin(kind, n, bytes)
                             : in_place       ? coll::select(kind, n, bytes, false, true)
                                              : coll::choice(kind, n, bytes);
      calls.push_back(pick == Algorithm::kSystem
                          ? std::function<void()>([&, kind, count, input] { system_call(kind, input, out.data(), count); })
                          : std::function<void()>(forced(pick)));
      const int iters = static_cast<int>(std::clamp<int64_t>((quick ? 1 : 4) * 2000000 / (bytes + 4000), 10, 2000));
      // the system's call again, halfway round the order from the first
      const size_t mid = calls.size() / 2 + 1;
      calls.insert(calls.begin() + static_cast<std::ptrdiff_t>(mid), calls.front());
      const auto timed = time_all(calls, iters, samples);
      if (me != 0) continue;
      std::vector<double> t = timed;  // the variants in column order, "again" apart
      const double again = t[mid];
      t.erase(t.begin() + static_cast<std::ptrdiff_t>(mid));
      const double sys = t.front(), tuned = t.back();
      std::printf("%-9s %8lld %9.2f", "", static_cast<long long>(bytes), sys * 1e6);
      for (size_t v = 1; v < t.size(); ++v) std::printf(" %9.2f %6.2f", t[v] * 1e6, sys / t[v]);
      // the table's name for the pick: it may be an algorithm without a
      // column here (a chain segment variant, Bruck's Alltoallv)
      std::printf(" %9.2f  %s\n", again * 1e6, coll::algorithm_name(pick));
      ++cells;
      faster += tuned * 1.05 <= std::min(sys, again);
      if (tuned > 1.05 * std::max(sys, again)) {
        ++slower;
        slower_cells += std::string(slower_cells.empty() ? "" : ", ") + oc.name + " " + std::to_string(bytes) +
                        " B (" + coll::algorithm_name(pick) + ")";
      }
    }
  }
  if (me == 0)
    std::printf("\nsummary on %d ranks: %d cells; tuned >= 5%% faster than both system timings in %d; > 5%% slower "
                "than both in %d%s%s\n", n, cells, faster, slower, slower ? ": " : "", slower_cells.c_str());
  return 0;
}

}  // namespace dtmpi::bench
