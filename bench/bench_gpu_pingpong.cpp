// dtmpi-bench pingpong --gpu: one-way time of 2D objects on device buffers
// between 2 ranks through the system MPI (which need not be CUDA-aware), with
// each method forced, side by side with what an application would write by
// hand (whole-buffer cudaMemcpy to host, MPI_Pack, MPI_Send, and the reverse)
// and with the limit (a ping-pong of the packed bytes between pinned host buffers).
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/config.hpp"

namespace dtmpi::bench {
namespace {

double pingpong(int me, int iters, const std::function<void()>& send, const std::function<void()>& recv) {
  PMPI_Barrier(MPI_COMM_WORLD);
  for (int w = 0; w < 3; ++w) {  // warm-up
    if (me == 0) send(), recv();
    else recv(), send();
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (me == 0) send(), recv();
    else recv(), send();
  }
  double t = (MPI_Wtime() - t0) / iters / 2;
  PMPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

}  // namespace

int bench_gpu_pingpong(int, char**) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) std::fprintf(stderr, "pingpong needs 2 ranks\n");
    return 2;
  }
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  cudaSetDevice(ndev > 1 ? me : 0);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, ndev > 1 ? me : 0);
  const int peer = 1 - me;
  struct Obj {
    int64_t bytes, block;
  };
  const Obj objs[] = {{1024, 1}, {1024, 64}, {1 << 20, 1}, {1 << 20, 64}, {4 << 20, 8}, {4 << 20, 128},
                      {64 << 20, 256}, {64 << 20, 4096}};
  if (me == 0)
    std::printf("device %s x%d (ranks on %s); one-way time in us\n%-22s %10s %10s %10s %12s %10s %8s\n", prop.name,
                ndev, ndev > 1 ? "separate GPUs" : "one GPU", "object", "oneshot", "staged", "auto",
                "manual", "limit", "auto/lim");
  for (const auto& o : objs) {
    const int64_t pitch = std::max<int64_t>(512, 2 * o.block), nblk = o.bytes / o.block;
    MPI_Datatype t;
    MPI_Type_vector(static_cast<int>(nblk), static_cast<int>(o.block), static_cast<int>(pitch), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    const size_t span = static_cast<size_t>((nblk - 1) * pitch + o.block);
    char* dev;
    cudaMalloc(&dev, span);
    cudaMemset(dev, me + 1, span);
    cudaDeviceSynchronize();
    const int iters = o.bytes >= (16 << 20) ? 10 : o.bytes >= (1 << 20) ? 30 : 200;
    double t_method[3];
    const char* methods[3] = {"oneshot", "staged", "auto"};
    for (int m = 0; m < 3; ++m) {
      setenv("DTMPI_METHOD", methods[m], 1);
      runtime::reload_config();
      t_method[m] = pingpong(
          me, iters, [&] { MPI_Send(dev, 1, t, peer, 0, MPI_COMM_WORLD); },
          [&] { MPI_Recv(dev, 1, t, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); });
    }
    // manual: whole-span copy to host, MPI_Pack on the host, send; the reverse on arrival
    std::vector<char> host(span), packed(static_cast<size_t>(o.bytes));
    auto manual_send = [&] {
      cudaMemcpy(host.data(), dev, span, cudaMemcpyDeviceToHost);
      int pos = 0;
      PMPI_Pack(host.data(), 1, t, packed.data(), static_cast<int>(o.bytes), &pos, MPI_COMM_WORLD);
      PMPI_Send(packed.data(), pos, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
    };
    auto manual_recv = [&] {
      PMPI_Recv(packed.data(), static_cast<int>(o.bytes), MPI_PACKED, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int pos = 0;
      PMPI_Unpack(packed.data(), static_cast<int>(o.bytes), &pos, host.data(), 1, t, MPI_COMM_WORLD);
      cudaMemcpy(dev, host.data(), span, cudaMemcpyHostToDevice);
    };
    const double t_manual = pingpong(me, std::max(3, iters / 4), manual_send, manual_recv);
    // limit: the packed bytes between pinned host buffers
    char* pinned;
    cudaHostAlloc(&pinned, static_cast<size_t>(o.bytes), cudaHostAllocDefault);
    const double t_limit = pingpong(
        me, iters, [&] { PMPI_Send(pinned, static_cast<int>(o.bytes), MPI_BYTE, peer, 2, MPI_COMM_WORLD); },
        [&] { PMPI_Recv(pinned, static_cast<int>(o.bytes), MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); });
    if (me == 0) {
      char name[64];
      std::snprintf(name, sizeof name, "%lld KiB, %lld B blocks", static_cast<long long>(o.bytes >> 10),
                    static_cast<long long>(o.block));
      std::printf("%-22s %10.1f %10.1f %10.1f %12.1f %10.1f %7.2fx\n", name, t_method[0] * 1e6, t_method[1] * 1e6,
                  t_method[2] * 1e6, t_manual * 1e6, t_limit * 1e6, t_method[2] / t_limit);
      std::fflush(stdout);
    }
    cudaFreeHost(pinned);
    cudaFree(dev);
    MPI_Type_free(&t);
  }
  unsetenv("DTMPI_METHOD");
  runtime::reload_config();
  return 0;
}

}  // namespace dtmpi::bench
