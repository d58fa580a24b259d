// dtmpi-bench rma --gpu: one-sided operations on a window over GPU memory
// (issue 21), rank 0 the origin, rank 1 the target, next to the manual way
// without dtmpi and the hardware's limit, in one run:
//   put / get   MPI_Win_lock + MPI_Put (MPI_Get) + MPI_Win_unlock of a
//               device buffer to (from) a window in rank 1's device memory
//   acc         MPI_Accumulate (MPI_SUM, doubles) in the same epoch form
//   acc-host    the same accumulate from a host-memory origin buffer (operands
//               packed into pinned staging that the kernel reads in place)
//   manual      what a program does without a CUDA-aware MPI: cudaMemcpy(2D)
//               to the host, MPI_Send, MPI_Recv, cudaMemcpy(2D) to the device,
//               an empty reply (so that it too ends when the bytes are there)
//   limit       cudaMemcpy(2D) device to device of the same bytes in one
//               process: the copy a direct CUDA IPC path would make
//   sys-host    the system MPI's own put (PMPI_*, bypassing dtmpi) to a window
//               over host memory, from host memory: what RMA costs without
//               GPUs ("n/a" where the system MPI cannot create the window;
//               Open MPI 4.1 needs OMPI_MCA_osc=pt2pt)
// DTMPI_RANKS_PER_NODE=1 makes rank 1 another (emulated) node: dtmpi's
// operations then take the message protocol.
// Objects: contiguous, and 2-D rows of 256 B with a pitch of 512 B on both
// sides (a vector datatype). Each row: median time per operation.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "timing.hpp"

namespace dtmpi::bench {
namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "dtmpi-bench rma: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

struct Shape {
  std::string name;
  int64_t bytes;   // payload
  int64_t rows;    // 1: contiguous
  int64_t row;     // bytes per row
  int64_t pitch;   // bytes between rows
};

// Time per iteration of `body` on rank 0 (rank 1 runs `serve` the same number
// of times), the median of 5 samples of `iters` iterations.
double timed(int me, int iters, const std::function<void()>& body, const std::function<void()>& serve) {
  std::vector<double> samples;
  for (int s = 0; s < 6; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) me == 0 ? body() : serve();
    MPI_Barrier(MPI_COMM_WORLD);
    if (s > 0) samples.push_back((MPI_Wtime() - t0) / iters);  // the first warms up
  }
  double m = median(samples);
  MPI_Bcast(&m, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return m;
}

}  // namespace

int bench_rma(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  int me = 0, n = 0, gpus = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) std::fprintf(stderr, "dtmpi-bench rma: run with 2 ranks\n");
    return 2;
  }
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    if (me == 0) std::printf("dtmpi-bench rma: no GPU\n");
    return 0;
  }
  cuda_ok(cudaSetDevice(me % gpus), "cudaSetDevice");
  std::vector<Shape> shapes;
  for (int64_t b = 8; b <= (int64_t{16} << 20); b *= quick ? 64 : 16)
    shapes.push_back({"contiguous", b, 1, b, b});
  for (int64_t b = 4096; b <= (int64_t{16} << 20); b *= quick ? 64 : 16)
    shapes.push_back({"rows 256/512", b, b / 256, 256, 512});
  const size_t span = size_t{32} << 20;
  void *win_mem = nullptr, *origin = nullptr, *limit_dst = nullptr;
  cuda_ok(cudaMalloc(&win_mem, span), "cudaMalloc");
  cuda_ok(cudaMalloc(&origin, span), "cudaMalloc");
  cuda_ok(cudaMalloc(&limit_dst, span), "cudaMalloc");
  cuda_ok(cudaMemset(origin, 1, span), "cudaMemset");
  std::vector<unsigned char> host(span);
  MPI_Win win;
  MPI_Win_create(win_mem, static_cast<MPI_Aint>(span), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  // the system MPI's window over host memory (created through PMPI: dtmpi never sees it)
  std::vector<unsigned char> host_win(span), host_origin(span, 1);
  MPI_Win sys_win = MPI_WIN_NULL;
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int sys_ok = PMPI_Win_create(host_win.data(), static_cast<MPI_Aint>(span), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &sys_win) == MPI_SUCCESS;
  int all_ok = 0;
  PMPI_Allreduce(&sys_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok && sys_win != MPI_WIN_NULL) PMPI_Win_free(&sys_win);
  if (me == 0) {
    std::printf("one-sided operations on GPU windows, 2 ranks, %d GPU(s); us per operation (median)\n", gpus);
    std::printf("%-13s %10s %9s %9s %9s %9s %9s %9s %9s %8s %8s\n", "object", "bytes", "put", "get", "acc",
                "acc-host", "manual", "limit", "sys-host", "put/man", "put/lim");
  }
  for (const Shape& s : shapes) {
    MPI_Datatype t;
    if (s.rows == 1) {
      MPI_Type_contiguous(static_cast<int>(s.bytes), MPI_BYTE, &t);
    } else {
      MPI_Type_vector(static_cast<int>(s.rows), static_cast<int>(s.row), static_cast<int>(s.pitch), MPI_BYTE, &t);
    }
    MPI_Type_commit(&t);
    MPI_Datatype dt;  // the same object as doubles, for the accumulate
    MPI_Type_vector(static_cast<int>(s.rows), static_cast<int>(std::max<int64_t>(1, s.row / 8)),
                    static_cast<int>(std::max<int64_t>(1, s.pitch / 8)), MPI_DOUBLE, &dt);
    MPI_Type_commit(&dt);
    const int iters = s.bytes >= (int64_t{1} << 20) ? 4 : (quick ? 20 : 50);
    auto nothing = [] {};
    const double put = timed(me, iters, [&] {
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Put(origin, 1, t, 1, 0, 1, t, win);
      MPI_Win_unlock(1, win);
    }, nothing);
    const double get = timed(me, iters, [&] {
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Get(origin, 1, t, 1, 0, 1, t, win);
      MPI_Win_unlock(1, win);
    }, nothing);
    const double acc = timed(me, iters, [&] {
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Accumulate(origin, 1, dt, 1, 0, 1, dt, MPI_SUM, win);
      MPI_Win_unlock(1, win);
    }, nothing);
    // the same accumulate with its operands in host memory (host_origin's
    // bytes as doubles: finite values)
    const double acc_host = timed(me, iters, [&] {
      MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
      MPI_Accumulate(host_origin.data(), 1, dt, 1, 0, 1, dt, MPI_SUM, win);
      MPI_Win_unlock(1, win);
    }, nothing);
    const size_t w = static_cast<size_t>(s.row), h = static_cast<size_t>(s.rows), p = static_cast<size_t>(s.pitch);
    const double manual = timed(
        me, iters,
        [&] {
          cuda_ok(cudaMemcpy2D(host.data(), w, origin, p, w, h, cudaMemcpyDeviceToHost), "D2H");
          PMPI_Send(host.data(), static_cast<int>(s.bytes), MPI_BYTE, 1, 7, MPI_COMM_WORLD);
          PMPI_Recv(nullptr, 0, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        },
        [&] {
          PMPI_Recv(host.data(), static_cast<int>(s.bytes), MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          cuda_ok(cudaMemcpy2D(win_mem, p, host.data(), w, w, h, cudaMemcpyHostToDevice), "H2D");
          PMPI_Send(nullptr, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
        });
    const double limit = timed(me, iters, [&] {
      cuda_ok(cudaMemcpy2D(limit_dst, p, origin, p, w, h, cudaMemcpyDeviceToDevice), "D2D");
    }, nothing);
    double sys = -1;
    if (all_ok)
      sys = timed(me, iters, [&] {
        PMPI_Win_lock(MPI_LOCK_SHARED, 1, 0, sys_win);
        PMPI_Put(host_origin.data(), 1, t, 1, 0, 1, t, sys_win);
        PMPI_Win_unlock(1, sys_win);
      }, nothing);
    char sys_text[16] = "n/a";
    if (sys >= 0) std::snprintf(sys_text, sizeof sys_text, "%.1f", sys * 1e6);
    if (me == 0)
      std::printf("%-13s %10lld %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9s %8.2f %8.1f\n", s.name.c_str(),
                  static_cast<long long>(s.bytes), put * 1e6, get * 1e6, acc * 1e6, acc_host * 1e6, manual * 1e6,
                  limit * 1e6, sys_text, put / manual, put / limit);
    MPI_Type_free(&t);
    MPI_Type_free(&dt);
  }
  MPI_Win_free(&win);
  if (all_ok) PMPI_Win_free(&sys_win);
  cudaFree(win_mem);
  cudaFree(origin);
  cudaFree(limit_dst);
  return 0;
}

}  // namespace dtmpi::bench
