// dtmpi-bench pack --gpu: MPI_Pack of device memory (dtmpi's, called through
// the interposed MPI_Pack) side by side with what CUDA-aware MPIs do (one
// cudaMemcpyAsync per contiguous block; cudaMemcpy2DAsync where it can express
// the layout) and with the limit (one cudaMemcpyAsync of the packed bytes),
// all in one run. Bandwidth counts bytes read + written (2 x packed).
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pack/gpu_pack.hpp"
#include "runtime/device.hpp"
#include "runtime/pointer_kind.hpp"
#include "timing.hpp"
#include "type/registry.hpp"

namespace dtmpi::bench {
namespace {

#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));               \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

constexpr int64_t kMaxSpan = int64_t{8} << 30;
constexpr int64_t kPerBlockCap = 2000;  // per-block baseline: measured on at most this many blocks

std::string human(int64_t b) {
  char s[32];
  if (b >= (1 << 20)) std::snprintf(s, sizeof s, "%lldMiB", static_cast<long long>(b >> 20));
  else if (b >= 1024) std::snprintf(s, sizeof s, "%lldKiB", static_cast<long long>(b >> 10));
  else std::snprintf(s, sizeof s, "%lldB", static_cast<long long>(b));
  return s;
}

struct Case {
  std::string name, kind;
  MPI_Datatype type;
  int count;
  int64_t block, pitch, nblocks;  // for the baselines (2D layouts); nblocks 0: no 2D baseline
};

struct Result {
  double ours, copy, per_block, copy2d, block_list;  // seconds; 0 = not measured
};

FILE* g_csv = nullptr;
cudaStream_t g_stream;

void run(const Case& c, std::vector<Result>& results) {
  int size = 0;
  MPI_Type_size(c.type, &size);
  MPI_Aint lb, ext, tlb, text;
  MPI_Type_get_extent(c.type, &lb, &ext);
  MPI_Type_get_true_extent(c.type, &tlb, &text);
  const int64_t bytes = int64_t{size} * c.count, span = tlb + text + (c.count - 1) * ext;
  if (span > kMaxSpan) {
    std::printf("%-44s skipped: touches %.1f GiB\n", c.name.c_str(), span / 1073741824.0);
    return;
  }
  char *src, *dst, *ref;
  CK(cudaMalloc(&src, static_cast<size_t>(span)));
  CK(cudaMalloc(&dst, static_cast<size_t>(bytes)));
  CK(cudaMalloc(&ref, static_cast<size_t>(bytes)));
  CK(cudaMemset(src, 7, static_cast<size_t>(span)));
  Result r{};
  std::vector<std::function<void()>> ops;
  ops.push_back([&] {
    int pos = 0;
    MPI_Pack(src, c.count, c.type, dst, static_cast<int>(bytes), &pos, MPI_COMM_SELF);
  });
  ops.push_back([&] {
    CK(cudaMemcpyAsync(ref, dst, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, g_stream));
    CK(cudaStreamSynchronize(g_stream));
  });
  const int64_t total_blocks = c.nblocks * c.count;
  const int64_t measured_blocks = std::min(total_blocks, kPerBlockCap);
  if (c.nblocks > 0) {
    ops.push_back([&] {  // what CUDA-aware MPIs do: one copy per contiguous block
      for (int64_t b = 0; b < measured_blocks; ++b)
        cudaMemcpyAsync(ref + b * c.block, src + (b % c.nblocks) * c.pitch + (b / c.nblocks) * ext,
                        static_cast<size_t>(c.block), cudaMemcpyDeviceToDevice, g_stream);
      cudaStreamSynchronize(g_stream);
    });
    ops.push_back([&] {
      for (int k = 0; k < c.count; ++k)
        cudaMemcpy2DAsync(ref + k * c.nblocks * c.block, static_cast<size_t>(c.block), src + k * ext,
                          static_cast<size_t>(c.pitch), static_cast<size_t>(c.block),
                          static_cast<size_t>(c.nblocks), cudaMemcpyDeviceToDevice, g_stream);
      cudaStreamSynchronize(g_stream);
    });
  }
  const bool compare_kernels = c.kind == "blocklist";
  const type::PackPlan* plan = type::find_plan(c.type);
  if (compare_kernels && plan) {
    ops.push_back([&] {
      if (!pack::pack_device_as_block_list(*plan, c.count, src, dst, 0, g_stream)) std::exit(1);
      cudaStreamSynchronize(g_stream);
    });
  }
  const double min_s = bytes >= (int64_t{16} << 20) ? 0.02 : 0.004;
  auto t = time_interleaved(ops, min_s, 5);
  size_t k = 0;
  r.ours = t[k++].median_s;
  r.copy = t[k++].median_s;
  if (c.nblocks > 0) {
    r.per_block = t[k++].median_s * static_cast<double>(total_blocks) / static_cast<double>(measured_blocks);
    r.copy2d = t[k++].median_s;
  }
  if (compare_kernels && plan) r.block_list = t[k++].median_s;
  // check the bytes against the CPU path of the system MPI
  std::vector<char> hsrc(static_cast<size_t>(span)), hwant(static_cast<size_t>(bytes)), hgot(hwant.size());
  CK(cudaMemcpy(hsrc.data(), src, hsrc.size(), cudaMemcpyDeviceToHost));
  int pos = 0;
  PMPI_Pack(hsrc.data(), c.count, c.type, hwant.data(), static_cast<int>(bytes), &pos, MPI_COMM_SELF);
  int p2 = 0;
  MPI_Pack(src, c.count, c.type, dst, static_cast<int>(bytes), &p2, MPI_COMM_SELF);
  CK(cudaMemcpy(hgot.data(), dst, hgot.size(), cudaMemcpyDeviceToHost));
  const bool ok = hgot == hwant;
  auto bw = [&](double s) { return s > 0 ? 2.0 * static_cast<double>(bytes) / s / 1e9 : 0.0; };
  const double best_base = std::min(r.per_block > 0 ? r.per_block : 1e30, r.copy2d > 0 ? r.copy2d : 1e30);
  std::printf("%-44s %9s %7.1f %8.1f %8.1f %6.0f%% %9.1f %9.1f %7.2fx%s%s\n", c.name.c_str(),
              human(bytes).c_str(), r.ours * 1e6, bw(r.ours), bw(r.copy), 100 * r.copy / r.ours,
              r.per_block > 0 ? r.per_block * 1e6 : 0.0, r.copy2d > 0 ? r.copy2d * 1e6 : 0.0,
              best_base < 1e29 ? best_base / r.ours : 0.0, ok ? "" : "  WRONG BYTES",
              r.block_list > 0 ? ("  block-list kernel " + std::to_string(r.block_list / r.ours).substr(0, 4) + "x the time").c_str() : "");
  std::fflush(stdout);
  if (g_csv)
    std::fprintf(g_csv, "%s,%s,%lld,%lld,%d,%.9f,%.9f,%.9f,%.9f,%.9f,%d\n", c.name.c_str(), c.kind.c_str(),
                 static_cast<long long>(bytes), static_cast<long long>(c.block), c.count, r.ours, r.copy,
                 r.per_block, r.copy2d, r.block_list, ok ? 1 : 0);
  results.push_back(r);
  CK(cudaFree(src));
  CK(cudaFree(dst));
  CK(cudaFree(ref));
}

void pointer_query_cost() {
  char* d;
  CK(cudaMalloc(&d, 1 << 20));
  std::vector<char> h(1 << 20);
  cudaPointerAttributes a{};
  auto t = time_interleaved({[&] { cudaPointerGetAttributes(&a, d + 64); },
                             [&] { cudaPointerGetAttributes(&a, h.data() + 64); },
                             [&] { (void)runtime::pointer_info(d + 64); },
                             [&] { (void)runtime::pointer_info(h.data() + 64); }},
                            0.01, 5);
  std::printf("pointer classification: cudaPointerGetAttributes %.0f ns (device) / %.0f ns (host); "
              "dtmpi pointer_info %.0f ns (device, range cache) / %.0f ns (host)\n",
              t[0].median_s * 1e9, t[1].median_s * 1e9, t[2].median_s * 1e9, t[3].median_s * 1e9);
  CK(cudaFree(d));
}

}  // namespace

int bench_gpu_pack(int argc, char** argv) {
  bool quick = false;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv = argv[++i];
  }
  if (!runtime::gpu_enabled()) {
    std::fprintf(stderr, "pack --gpu: no usable GPU\n");
    return 2;
  }
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; times are call to return (host timer), medians of 5 samples\n", prop.name);
  pointer_query_cost();
  if (!csv.empty()) {
    g_csv = std::fopen(csv.c_str(), "w");
    if (g_csv) std::fprintf(g_csv, "case,kind,packed_bytes,block,count,ours_s,copy_s,per_block_s,copy2d_s,block_list_s,ok\n");
  }
  std::printf("%-44s %9s %7s %8s %8s %7s %9s %9s %8s\n", "case (pitch 512 B)", "packed", "us", "GB/s",
              "copyGB/s", "ofcopy", "perblk us", "2D us", "vs best");
  std::vector<Case> cases;
  std::vector<int64_t> objects = quick ? std::vector<int64_t>{1 << 10, 4 << 20}
                                       : std::vector<int64_t>{64, 1 << 10, 64 << 10, 1 << 20, 4 << 20, 64 << 20};
  std::vector<int64_t> blocks = quick ? std::vector<int64_t>{1, 32, 256}
                                      : std::vector<int64_t>{1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
  for (int64_t obj : objects)
    for (int64_t b : blocks) {
      if (b > obj) continue;
      const int64_t pitch = std::max<int64_t>(512, 2 * b), n = obj / b;
      for (int count : {1, 2}) {
        MPI_Datatype v, s;
        MPI_Type_vector(static_cast<int>(n), static_cast<int>(b), static_cast<int>(pitch), MPI_BYTE, &v);
        MPI_Type_commit(&v);
        cases.push_back({"vector " + human(obj) + " blk " + human(b) + " x" + std::to_string(count), "vector", v,
                         count, b, pitch, n});
        if (quick) continue;
        int sizes[2] = {static_cast<int>(n), static_cast<int>(pitch)}, subs[2] = {static_cast<int>(n), static_cast<int>(b)},
            st[2] = {0, 0};
        MPI_Type_create_subarray(2, sizes, subs, st, MPI_ORDER_C, MPI_BYTE, &s);
        MPI_Type_commit(&s);
        cases.push_back({"subarray " + human(obj) + " blk " + human(b) + " x" + std::to_string(count), "subarray",
                         s, count, b, pitch, n});
      }
    }
  // 3D halo faces: radius 3, 8 double quantities, 256^3 grid
  const int g = 256, m = g + 6;
  for (int axis = 0; axis < 3; ++axis) {
    int gs[4] = {m, m, m, 8}, ss[4] = {g, g, g, 8}, s0[4] = {3, 3, 3, 0};
    ss[axis] = 3;
    MPI_Datatype t;
    MPI_Type_create_subarray(4, gs, ss, s0, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    cases.push_back({std::string("halo face ") + "zyx"[axis] + " 256^3 r3 q8", "halo", t, 1, 0, 0, 0});
  }
  // the strided kernel vs the block-list kernel on one layout (4 MiB, 64 B blocks)
  {
    MPI_Datatype v;
    MPI_Type_vector(65536, 64, 512, MPI_BYTE, &v);
    MPI_Type_commit(&v);
    cases.push_back({"vector 4MiB blk 64B (kernels compared)", "blocklist", v, 1, 64, 512, 65536});
  }
  // an irregular indexed type, about 4 MiB of doubles in blocks of 1-5
  {
    const int n = (4 << 20) / 8 / 3;
    std::vector<int> bl(n), di(n);
    for (int i = 0, at = 0; i < n; ++i) {
      bl[i] = 1 + (i % 5);
      di[i] = at;
      at += bl[i] + 3 + (i % 7);
    }
    MPI_Datatype t;
    MPI_Type_indexed(n, bl.data(), di.data(), MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    cases.push_back({"indexed irregular 4MiB", "indexed", t, 1, 0, 0, 0});
  }
  std::vector<Result> results;
  for (auto& c : cases) {
    run(c, results);
    MPI_Type_free(&c.type);
  }
  if (g_csv) std::fclose(g_csv);
  return 0;
}

}  // namespace dtmpi::bench
