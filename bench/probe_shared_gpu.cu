// dtmpi-probe-shared-gpu: what it costs when two processes take turns on one
// GPU (two MPI ranks sharing a GPU, no MPS), one way, in microseconds:
//   host            a 1-byte PMPI_Send/PMPI_Recv ping-pong (no GPU work)
//   one side        rank 0 launches an empty kernel and waits for it at each
//                   turn, rank 1 only answers: no other context in between
//   both sides      each rank does that at its turn: the GPU switches between
//                   the two processes' contexts every turn
//   IPC copy        each rank copies 1 MiB out of the other's memory (CUDA IPC)
//                   at its turn and waits for the copy
//   stream waits    no host in the loop: each rank's stream waits
//                   (cuStreamWaitValue64) for the other's counter and then
//                   writes its own; the GPU alone hands the turn over
//   copies          each rank's turn is one copy-engine copy of 64 KiB:
//                   device to pinned host, pinned host to device, device to
//                   device (its own memory), a strided 2D device-to-device
//                   copy -- which engines pay the ~145 us context turn?
//   kept busy       "both sides" again while each rank keeps a stream wait
//                   pending on a second stream of its context (released at
//                   the end), or in a second context of its own: does a
//                   context that never goes idle take its turn sooner?
// Run with 2 ranks on one GPU (and, for comparison, on two).
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)
#define CHECK_CU(x)                                                      \
  do {                                                                   \
    CUresult r_ = (x);                                                   \
    if (r_ != CUDA_SUCCESS) {                                            \
      std::fprintf(stderr, "%s:%d %s: error %d\n", __FILE__, __LINE__, #x, \
                   static_cast<int>(r_));                                \
      MPI_Abort(MPI_COMM_WORLD, 1);                                      \
    }                                                                    \
  } while (0)

namespace {

__global__ void empty_kernel() {}

// A gather of `rows` rows of `width` bytes, `pitch` apart, into `dst` (what a
// pack kernel does for a 2D-strided layout), byte by byte.
__global__ void gather_rows(const char* src, char* dst, size_t width, size_t pitch, size_t rows) {
  const size_t n = width * rows;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = src[(i / width) * pitch + i % width];
}

int g_me = 0;
constexpr int kIters = 200;

// One-way time of `iters` turns each: `turn()` is what a rank does when it
// has the token; rank 0 starts. Median of 5 repetitions.
double pingpong_us(const std::function<void(int)>& turn, int iters = kIters) {
  std::vector<double> t;
  char token = 0;
  for (int rep = 0; rep < 5; ++rep) {
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (g_me == 0) {
        turn(i);
        PMPI_Send(&token, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        PMPI_Recv(&token, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        PMPI_Recv(&token, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        turn(i);
        PMPI_Send(&token, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    t.push_back((MPI_Wtime() - t0) / iters / 2 * 1e6);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (g_me == 0) std::fprintf(stderr, "run with 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  CHECK_CUDA(cudaSetDevice(g_me % ndev));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaFree(nullptr));

  const double host = pingpong_us([](int) {});
  auto kernel_and_wait = [&] {
    empty_kernel<<<1, 32, 0, s>>>();
    CHECK_CUDA(cudaStreamSynchronize(s));
  };
  const double one_side = pingpong_us([&](int) {
    if (g_me == 0) kernel_and_wait();
  });
  const double both = pingpong_us([&](int) { kernel_and_wait(); });

  // CUDA IPC: each rank exports 1 MiB and a 64-bit counter, maps the other's
  const size_t bytes = size_t{1} << 20;
  char *mine = nullptr, *local = nullptr;
  unsigned long long* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&mine, bytes));
  CHECK_CUDA(cudaMalloc(&local, bytes));
  CHECK_CUDA(cudaMalloc(&counter, 2 << 20));  // its own allocation (IPC maps whole allocations)
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(unsigned long long)));
  cudaIpcMemHandle_t h[2], theirs[2];
  CHECK_CUDA(cudaIpcGetMemHandle(&h[0], mine));
  CHECK_CUDA(cudaIpcGetMemHandle(&h[1], counter));
  PMPI_Sendrecv(h, sizeof h, MPI_BYTE, 1 - g_me, 1, theirs, sizeof theirs, MPI_BYTE, 1 - g_me, 1, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE);
  void *peer = nullptr, *peer_counter = nullptr;
  CHECK_CUDA(cudaIpcOpenMemHandle(&peer, theirs[0], cudaIpcMemLazyEnablePeerAccess));
  CHECK_CUDA(cudaIpcOpenMemHandle(&peer_counter, theirs[1], cudaIpcMemLazyEnablePeerAccess));
  const double ipc = pingpong_us([&](int) {
    CHECK_CUDA(cudaMemcpyAsync(local, peer, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  });
  const double copy_one_side = pingpong_us([&](int) {
    if (g_me == 0) {
      CHECK_CUDA(cudaMemcpyAsync(local, peer, bytes, cudaMemcpyDeviceToDevice, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
    }
  });

  // one copy per turn, both sides, 64 KiB
  const size_t small = size_t{64} << 10;
  char* pinned = nullptr;
  CHECK_CUDA(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
  auto copy_turn = [&](void* dst, const void* src, cudaMemcpyKind kind) {
    return pingpong_us([&](int) {
      CHECK_CUDA(cudaMemcpyAsync(dst, src, small, kind, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
    });
  };
  const double d2h = copy_turn(pinned, mine, cudaMemcpyDeviceToHost);
  const double h2d = copy_turn(mine, pinned, cudaMemcpyHostToDevice);
  const double d2d = copy_turn(local, mine, cudaMemcpyDeviceToDevice);
  const double d2d_2d = pingpong_us([&](int) {  // 4096 rows of 16 B, pitch 64 B -> packed
    CHECK_CUDA(cudaMemcpy2DAsync(local, 16, mine, 64, 16, 4096, cudaMemcpyDeviceToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  });
  const double d2h_2d = pingpong_us([&](int) {
    CHECK_CUDA(cudaMemcpy2DAsync(pinned, 16, mine, 64, 16, 4096, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  });
  const double d2d_one_side = pingpong_us([&](int) {
    if (g_me == 0) {
      CHECK_CUDA(cudaMemcpyAsync(local, mine, small, cudaMemcpyDeviceToDevice, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
    }
  });
  // 64 KiB of 16-B and 256-B rows packed into mapped pinned memory: a kernel
  // against a 2D copy-engine copy, on one side only and on both
  char* mapped = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), pinned, 0));
  struct PackRow {
    double kernel_one, copy_one, kernel_both, copy_both;
  } packs[2];
  const size_t widths[2] = {16, 256};
  for (int w = 0; w < 2; ++w) {
    const size_t width = widths[w], pitch = 4 * width, rows = small / width;
    auto by_kernel = [&] {
      gather_rows<<<static_cast<unsigned>((small + 255) / 256), 256, 0, s>>>(mine, mapped, width, pitch, rows);
      CHECK_CUDA(cudaStreamSynchronize(s));
    };
    auto by_copy = [&] {
      CHECK_CUDA(cudaMemcpy2DAsync(pinned, width, mine, pitch, width, rows, cudaMemcpyDeviceToHost, s));
      CHECK_CUDA(cudaStreamSynchronize(s));
    };
    packs[w].kernel_one = pingpong_us([&](int) { if (g_me == 0) by_kernel(); });
    packs[w].copy_one = pingpong_us([&](int) { if (g_me == 0) by_copy(); });
    packs[w].kernel_both = pingpong_us([&](int) { by_kernel(); });
    packs[w].copy_both = pingpong_us([&](int) { by_copy(); });
  }
  CHECK_CUDA(cudaFreeHost(pinned));

  // GPU-side turns: rank 0 writes 1, 3, 5, ... after seeing the peer's 0, 2,
  // 4, ...; rank 1 writes 2, 4, ... after seeing 1, 3, ...
  const int turns = 200;
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < turns; ++i) {
    const unsigned long long wait_for = 2ull * i + (g_me == 0 ? 0 : 1), write = 2ull * i + (g_me == 0 ? 1 : 2);
    if (wait_for > 0)
      CHECK_CU(cuStreamWaitValue64(s, reinterpret_cast<CUdeviceptr>(peer_counter), wait_for, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK_CU(cuStreamWriteValue64(s, reinterpret_cast<CUdeviceptr>(counter), write, CU_STREAM_WRITE_VALUE_DEFAULT));
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  PMPI_Barrier(MPI_COMM_WORLD);
  const double waits = (MPI_Wtime() - t0) / (2.0 * turns) * 1e6;

  // a pending wait on a second stream of the same context, released after
  unsigned long long* gate = nullptr;
  CHECK_CUDA(cudaMalloc(&gate, sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemset(gate, 0, sizeof(unsigned long long)));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t keeper;
  CHECK_CUDA(cudaStreamCreateWithFlags(&keeper, cudaStreamNonBlocking));
  CHECK_CU(cuStreamWaitValue64(keeper, reinterpret_cast<CUdeviceptr>(gate), 1, CU_STREAM_WAIT_VALUE_GEQ));
  const double kept_same = pingpong_us([&](int) { kernel_and_wait(); });
  const double kept_same_ipc = pingpong_us([&](int) {
    CHECK_CUDA(cudaMemcpyAsync(local, peer, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
  });
  CHECK_CU(cuStreamWriteValue64(s, reinterpret_cast<CUdeviceptr>(gate), 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  CHECK_CUDA(cudaStreamSynchronize(keeper));
  // the same from a second context of this process
  CUcontext primary = nullptr, second = nullptr;
  CUdevice dev = 0;
  CHECK_CU(cuCtxGetCurrent(&primary));
  CHECK_CU(cuCtxGetDevice(&dev));
  CHECK_CU(cuCtxCreate(&second, nullptr, 0, dev));
  CUdeviceptr gate2 = 0;
  CUstream keeper2 = nullptr;
  CHECK_CU(cuMemAlloc(&gate2, 8));
  CHECK_CU(cuMemsetD8(gate2, 0, 8));
  CHECK_CU(cuStreamCreate(&keeper2, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamWaitValue64(keeper2, gate2, 1, CU_STREAM_WAIT_VALUE_GEQ));
  CHECK_CU(cuCtxSetCurrent(primary));
  const double kept_other = pingpong_us([&](int) { kernel_and_wait(); });
  CHECK_CU(cuCtxSetCurrent(second));
  CHECK_CU(cuMemsetD8(gate2, 1, 1));
  CHECK_CU(cuStreamSynchronize(keeper2));
  CHECK_CU(cuStreamDestroy(keeper2));
  CHECK_CU(cuMemFree(gate2));
  CHECK_CU(cuCtxSetCurrent(primary));
  CHECK_CU(cuCtxDestroy(second));
  CHECK_CU(cuCtxSetCurrent(primary));
  const double after = pingpong_us([&](int) { kernel_and_wait(); });

  if (g_me == 0) {
    int dev0 = 0, dev1 = 0;
    cudaGetDevice(&dev0);
    PMPI_Recv(&dev1, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, dev0);
    std::printf("# dtmpi-probe-shared-gpu: %s, rank 0 on device %d, rank 1 on device %d; one way, us\n", p.name, dev0,
                dev1);
    std::printf("%-48s %9.2f\n", "host 1-byte ping-pong", host);
    std::printf("%-48s %9.2f\n", "kernel + wait, one side only", one_side);
    std::printf("%-48s %9.2f\n", "kernel + wait, both sides (context turns)", both);
    std::printf("%-48s %9.2f\n", "1 MiB IPC copy + wait, one side only", copy_one_side);
    std::printf("%-48s %9.2f\n", "1 MiB IPC copy + wait, both sides", ipc);
    std::printf("%-48s %9.2f\n", "stream waits on each other's counter (GPU only)", waits);
    std::printf("%-48s %9.2f\n", "64 KiB D2D copy + wait, one side only", d2d_one_side);
    std::printf("%-48s %9.2f\n", "64 KiB D2H (pinned) copy + wait, both sides", d2h);
    std::printf("%-48s %9.2f\n", "64 KiB H2D (pinned) copy + wait, both sides", h2d);
    std::printf("%-48s %9.2f\n", "64 KiB D2D copy + wait, both sides", d2d);
    std::printf("%-48s %9.2f\n", "64 KiB 2D D2D copy (16 B rows) + wait, both", d2d_2d);
    std::printf("%-48s %9.2f\n", "64 KiB 2D D2H copy (16 B rows) + wait, both", d2h_2d);
    for (int w = 0; w < 2; ++w) {
      char label[96];
      std::snprintf(label, sizeof label, "pack 64 KiB of %zu-B rows to pinned: kernel, one side", widths[w]);
      std::printf("%-48s %9.2f\n", label, packs[w].kernel_one);
      std::snprintf(label, sizeof label, "pack 64 KiB of %zu-B rows to pinned: 2D copy, one side", widths[w]);
      std::printf("%-48s %9.2f\n", label, packs[w].copy_one);
      std::snprintf(label, sizeof label, "pack 64 KiB of %zu-B rows to pinned: kernel, both", widths[w]);
      std::printf("%-48s %9.2f\n", label, packs[w].kernel_both);
      std::snprintf(label, sizeof label, "pack 64 KiB of %zu-B rows to pinned: 2D copy, both", widths[w]);
      std::printf("%-48s %9.2f\n", label, packs[w].copy_both);
    }
    std::printf("%-48s %9.2f\n", "both sides, a wait pending on a 2nd stream", kept_same);
    std::printf("%-48s %9.2f\n", "IPC copy both sides, a wait pending on a 2nd stream", kept_same_ipc);
    std::printf("%-48s %9.2f\n", "both sides, a wait pending in a 2nd context", kept_other);
    std::printf("%-48s %9.2f\n", "both sides again, nothing pending", after);
  } else {
    int dev = 0;
    cudaGetDevice(&dev);
    PMPI_Send(&dev, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
  }
  cudaIpcCloseMemHandle(peer);
  cudaIpcCloseMemHandle(peer_counter);
  cudaFree(mine);
  cudaFree(local);
  cudaFree(counter);
  cudaFree(gate);
  cudaStreamDestroy(keeper);
  cudaStreamDestroy(s);
  MPI_Finalize();
  return 0;
}
