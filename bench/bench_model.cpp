// dtmpi-bench model [--quick] [--csv F]: does the performance model choose
// well? For a sweep of (object size, block size, count, IPC peer or not)
// cases on device buffers between 2 ranks, times every method forced and
// auto, and reports the share of cases where auto is within 10% of the best
// forced method, the worst auto/best ratio, and the error of the model's
// prediction for the method it chose. "Not same node" is emulated by marking
// the peer as unreachable over CUDA IPC. Also the cost of a decision, cached
// and uncached.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/config.hpp"
#include "timing.hpp"
#include "transport/peers.hpp"
#include "transport/predict.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::bench {
namespace tp = dtmpi::transport;

namespace {

// ns per call of choose_by_model: hits of the memo, and misses (memo cleared).
void decision_cost() {
  tp::Shape s;
  s.bytes = 3 << 20;
  s.block = 48;
  s.ipc = true;
  const int n = 200000;
  auto t0 = std::chrono::steady_clock::now();
  unsigned sink = 0;
  for (int i = 0; i < n; ++i) {
    s.bytes = (3 << 20) + (i & 7);
    sink += static_cast<unsigned>(tp::choose_by_model(s));
  }
  const double hit = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  const int m = 20000;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < m; ++i) {
    tp::clear_decisions();
    sink += static_cast<unsigned>(tp::choose_by_model(s));
  }
  const double miss = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / m;
  std::printf("decision cost: %.0f ns cached (memo hit), %.0f ns uncached (prediction of 4 methods + insert)%s\n",
              hit * 1e9, miss * 1e9, sink == 12345 ? " " : "");
}

}  // namespace

int bench_model(int argc, char** argv) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) std::fprintf(stderr, "model needs 2 ranks\n");
    return 2;
  }
  bool quick = false;
  const char* csv_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv_path = argv[++i];
  }
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  cudaSetDevice(ndev > 1 ? me : 0);
  const tp::Model& model = tp::current_model();
  if (me == 0) {
    std::printf("model: %s%s\n", model.defaults ? "built-in defaults" : ("measured on " + model.gpu).c_str(),
                model.quick ? " (quick)" : "");
    decision_cost();
  }
  const int peer = 1 - me;
  const int64_t sizes[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  const int64_t blocks[] = {1, 4, 16, 64, 256, 1024, 4096};
  const char* methods[4] = {"oneshot", "staged", "pipelined", "device"};
  FILE* csv = me == 0 && csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv) std::fprintf(csv, "bytes,block,pitch,count,ipc,oneshot,staged,pipelined,device,auto,auto_method,predicted\n");
  int cases = 0, within = 0;
  double worst = 0, err_sum = 0;
  std::vector<double> errs;
  if (me == 0)
    std::printf("%9s %6s %6s %3s %4s | %9s %9s %9s %9s | %9s %-9s %6s %9s\n", "bytes", "block", "pitch", "cnt", "ipc", "oneshot",
                "staged", "pipelined", "device", "auto", "(choice)", "a/best", "predicted");
  for (int ipc = 1; ipc >= 0; --ipc) {
    if (!ipc) tp::mark_no_ipc(tp::world_rank_of(MPI_COMM_WORLD, peer));  // "another node"
    for (int64_t size : sizes) {
      if (quick && (size == (16 << 10) || size == (16 << 20))) continue;
      for (int64_t block : blocks) {
        if (block > size / 4 || (quick && (block == 4 || block == 1024))) continue;
        // count 1 and 2 at pitch 2 x block; a wide pitch (16 x block) too for
        // mid sizes, where the model interpolates between its two stride grids
        const bool wide_case = size >= (64 << 10) && size <= (16 << 20) && (block == 4 || block == 64 || block == 1024);
        for (int variant = 0; variant < (wide_case ? 3 : 2); ++variant) {
          const int count = variant == 1 ? 2 : 1;
          const int64_t elem = size / count, nblk = elem / block, pitch = (variant == 2 ? 16 : 2) * block;
          MPI_Datatype vec;
          MPI_Type_vector(static_cast<int>(nblk), static_cast<int>(block), static_cast<int>(pitch), MPI_BYTE, &vec);
          MPI_Datatype r;  // elements `extent` apart: count copies back to back
          MPI_Type_create_resized(vec, 0, nblk * pitch, &r);
          MPI_Type_commit(&r);
          const size_t span = static_cast<size_t>(count * nblk * pitch);
          char* dev;
          cudaMalloc(&dev, span);
          cudaMemset(dev, me + 1, span);
          cudaDeviceSynchronize();
          const double budget = quick ? 0.02 : 0.05;
          double t[5];
          for (int m = 0; m < 5; ++m) {
            setenv("DTMPI_METHOD", m < 4 ? methods[m] : "auto", 1);
            runtime::reload_config();
            t[m] = pingpong(
                me, budget, [&] { MPI_Send(dev, count, r, peer, 0, MPI_COMM_WORLD); },
                [&] { MPI_Recv(dev, count, r, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); });
          }
          tp::Shape s;
          s.bytes = size;
          s.block = block;
          s.pitch = pitch;
          s.multi = size >= tp::kMultiMin;
          s.ipc = s.multi && ipc;
          const auto pred = tp::predict(model, s, runtime::config().pipeline_chunk);
          const tp::Method chosen = tp::choose_by_model(s);
          double best = t[0];
          for (int m = 1; m < 4; ++m)
            if (t[m] < best && (m < 2 || s.multi) && (m != 3 || s.ipc)) best = t[m];
          const double ratio = t[4] / best;
          const double predicted = pred.seconds[static_cast<int>(chosen)];
          const double err = predicted / t[4] - 1;
          ++cases;
          within += ratio <= 1.10 ? 1 : 0;
          worst = std::max(worst, ratio);
          errs.push_back(std::fabs(err));
          err_sum += std::fabs(err);
          if (me == 0) {
            std::printf("%9lld %6lld %6lld %3d %4s | %9.1f %9.1f %9.1f %9.1f | %9.1f %-9s %5.2fx %9.1f\n",
                        static_cast<long long>(size), static_cast<long long>(block), static_cast<long long>(pitch),
                        count, ipc ? "yes" : "no",
                        t[0] * 1e6, t[1] * 1e6, t[2] * 1e6, t[3] * 1e6, t[4] * 1e6, tp::method_name(chosen), ratio,
                        predicted * 1e6);
            std::fflush(stdout);
            if (csv)
              std::fprintf(csv, "%lld,%lld,%lld,%d,%d,%g,%g,%g,%g,%g,%s,%g\n", static_cast<long long>(size),
                           static_cast<long long>(block), static_cast<long long>(pitch), count, ipc, t[0], t[1], t[2], t[3], t[4],
                           tp::method_name(chosen), predicted);
          }
          cudaFree(dev);
          MPI_Type_free(&r);
          MPI_Type_free(&vec);
        }
      }
    }
  }
  unsetenv("DTMPI_METHOD");
  runtime::reload_config();
  if (csv) std::fclose(csv);
  if (me == 0) {
    std::sort(errs.begin(), errs.end());
    std::printf("\n%d cases: auto within 10%% of the best forced method in %d (%.1f%%); worst auto/best %.2fx; "
                "|predicted/measured - 1| of auto's method: median %.0f%%, mean %.0f%%, 90th percentile %.0f%%\n",
                cases, within, 100.0 * within / cases, worst, 100 * errs[errs.size() / 2], 100 * err_sum / cases,
                100 * errs[errs.size() * 9 / 10]);
  }
  return 0;
}

}  // namespace dtmpi::bench
