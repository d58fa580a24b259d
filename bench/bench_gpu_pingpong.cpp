// dtmpi-bench pingpong --gpu [--quick] [--csv FILE]: one-way time of 2D and 3D
// objects on device buffers between 2 ranks through the system MPI (which
// need not be CUDA-aware), each transfer method forced and auto, side by side
// in one run with
//   manual     what an application writes by hand: whole-span cudaMemcpy to
//              the host, MPI_Pack, MPI_Send, and the reverse on the receiver
//   per-block  cudaMemcpy of each block into a host buffer, MPI_Send, and a
//              cudaMemcpy of each block on the receiver (for objects of many
//              blocks timed on 4096 blocks and scaled: marked ~)
//   limit      a contiguous transfer of the packed bytes by the best path:
//              min(host MPI ping-pong of pinned buffers, cudaMemcpyPeer
//              between the two GPUs). With both ranks on one GPU the GPU path
//              is the receiver copying the bytes out of the sender's buffer
//              over CUDA IPC after a 1-byte message: every turn of two
//              processes on one GPU (no MPS) that runs the compute engine (a
//              kernel, a device-to-device copy) costs a context switch (~150 us
//              on an H100, bench/probe_shared_gpu.cu), which a copy inside one
//              process (printed beside it, "1 proc") never pays.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/config.hpp"
#include "timing.hpp"

namespace dtmpi::bench {
namespace {

double seconds_of(const std::function<void()>& f, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

struct Object {
  std::string name;
  MPI_Datatype type;
  int64_t bytes, block, nblocks, span;
  std::vector<int64_t> block_offsets;  // for the per-block baseline (first 4096)
};

Object object_2d(int64_t bytes, int64_t block) {
  const int64_t pitch = std::max<int64_t>(2 * block, 16), n = bytes / block;
  Object o;
  char name[64];
  std::snprintf(name, sizeof name, "2D %lld KiB / %lld B", static_cast<long long>(bytes >> 10),
                static_cast<long long>(block));
  o.name = name;
  MPI_Type_vector(static_cast<int>(n), static_cast<int>(block), static_cast<int>(pitch), MPI_BYTE, &o.type);
  MPI_Type_commit(&o.type);
  o.bytes = bytes;
  o.block = block;
  o.nblocks = n;
  o.span = (n - 1) * pitch + block;
  for (int64_t i = 0; i < std::min<int64_t>(n, 4096); ++i) o.block_offsets.push_back(i * pitch);
  return o;
}

// Contiguous bytes: dtmpi makes a non-CUDA-aware MPI CUDA-aware.
Object object_contiguous(int64_t bytes) {
  Object o;
  o.name = "contiguous " + std::to_string(bytes >> 10) + " KiB";
  MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &o.type);
  MPI_Type_commit(&o.type);
  o.bytes = o.block = o.span = bytes;
  o.nblocks = 1;
  o.block_offsets = {0};
  return o;
}

// A face of thickness 3 of a cube of n^3 doubles: x-face (24 B blocks) or y-face.
Object object_3d(int n, bool xface) {
  const int sizes[3] = {n, n, n};
  const int sub[3] = {n - 6, xface ? n - 6 : 3, xface ? 3 : n - 6};
  const int start[3] = {3, xface ? 3 : 0, 0};
  Object o;
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &o.type);
  MPI_Type_commit(&o.type);
  o.block = int64_t{sub[2]} * 8;
  o.nblocks = int64_t{sub[0]} * sub[1];
  o.bytes = o.block * o.nblocks;
  o.span = int64_t{n} * n * n * 8;
  char name[64];
  std::snprintf(name, sizeof name, "3D %s %d^3 %lld KiB / %lld B", xface ? "x" : "y", n,
                static_cast<long long>(o.bytes >> 10), static_cast<long long>(o.block));
  o.name = name;
  for (int64_t i = 0; i < std::min<int64_t>(o.nblocks, 4096); ++i) {
    const int64_t z = 3 + i / sub[1], y = start[1] + i % sub[1];
    o.block_offsets.push_back(((z * n + y) * n + start[2]) * 8);
  }
  return o;
}

// Both ranks on one GPU: the receiver copies `bytes` out of the sender's
// device buffer over CUDA IPC once a 1-byte message says they are there.
double ipc_copy_pingpong(int me, double budget, size_t bytes) {
  const int peer = 1 - me;
  void *mine = nullptr, *local = nullptr, *theirs = nullptr;
  cudaMalloc(&mine, bytes);
  cudaMalloc(&local, bytes);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaIpcMemHandle_t h, ph;
  cudaIpcGetMemHandle(&h, mine);
  PMPI_Sendrecv(&h, sizeof h, MPI_BYTE, peer, 3, &ph, sizeof ph, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE);
  int ok = cudaIpcOpenMemHandle(&theirs, ph, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess;
  PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  double t = -1;  // no IPC between the two
  if (ok) {
    char token = 0;
    t = pingpong(
        me, budget, [&] { PMPI_Send(&token, 1, MPI_BYTE, peer, 4, MPI_COMM_WORLD); },
        [&] {
          PMPI_Recv(&token, 1, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          cudaMemcpyAsync(local, theirs, bytes, cudaMemcpyDeviceToDevice, s);
          cudaStreamSynchronize(s);
        });
    PMPI_Barrier(MPI_COMM_WORLD);  // the peer is done reading before the handle closes
  }
  if (theirs) cudaIpcCloseMemHandle(theirs);
  PMPI_Barrier(MPI_COMM_WORLD);
  cudaStreamDestroy(s);
  cudaFree(mine);
  cudaFree(local);
  return t;
}

}  // namespace

int bench_gpu_pingpong(int argc, char** argv) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) std::fprintf(stderr, "pingpong needs 2 ranks\n");
    return 2;
  }
  bool quick = false;
  const char* csv_path = nullptr;
  const char* filter = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
    if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv_path = argv[++i];
  }
  const double budget = quick ? 0.05 : 0.15;
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  const int mydev = ndev > 1 ? me : 0;
  cudaSetDevice(mydev);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, mydev);
  const int peer = 1 - me;
  std::vector<Object> objs;
  const int64_t sizes[] = {1 << 10, 64 << 10, 1 << 20, 4 << 20, 64 << 20};
  const int64_t blocks[] = {1, 16, 256, 4096};
  for (int64_t s : sizes)
    for (int64_t b : blocks) {
      if (b > s / 4 || (s >= (64 << 20) && b < 256) || (quick && s == (64 << 20) && b != 4096)) continue;
      objs.push_back(object_2d(s, b));
    }
  objs.push_back(object_contiguous(1 << 20));
  objs.push_back(object_contiguous(64 << 20));
  objs.push_back(object_3d(96, true));
  objs.push_back(object_3d(215, true));
  objs.push_back(object_3d(256, false));
  if (filter) {  // objects whose name contains `filter`
    std::vector<Object> kept;
    for (auto& o : objs) {
      if (o.name.find(filter) != std::string::npos) kept.push_back(o);
      else MPI_Type_free(&o.type);
    }
    objs = kept;
  }
  FILE* csv = me == 0 && csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv)
    std::fprintf(csv, "object,bytes,block,oneshot,staged,pipelined,device,auto,manual,per_block,per_block_scaled,"
                      "limit_host,limit_peer,limit_one_process\n");
  const bool one_gpu = ndev == 1;
  if (me == 0) {
    std::printf("device %s x%d (ranks on %s); one-way time in us; limit = min(host pinned, %s)\n", prop.name, ndev,
                one_gpu ? "one GPU" : "separate GPUs",
                one_gpu ? "IPC copy between the two processes" : "cudaMemcpyPeer");
    std::printf("%-30s %9s %9s %9s %9s %9s | %10s %11s | %9s %9s | %8s %9s%s\n", "object", "oneshot", "staged",
                "pipelined", "device", "auto", "manual", "per-block", "lim host", one_gpu ? "lim ipc" : "lim peer",
                "auto/lim", "blk/auto", one_gpu ? " |   1 proc" : "");
  }
  const char* methods[5] = {"oneshot", "staged", "pipelined", "device", "auto"};
  for (auto& o : objs) {
    char* dev;
    cudaMalloc(&dev, static_cast<size_t>(o.span));
    cudaMemset(dev, me + 1, static_cast<size_t>(o.span));
    cudaDeviceSynchronize();
    double t_method[5];
    for (int m = 0; m < 5; ++m) {
      setenv("DTMPI_METHOD", methods[m], 1);
      runtime::reload_config();
      t_method[m] = pingpong(
          me, budget, [&] { MPI_Send(dev, 1, o.type, peer, 0, MPI_COMM_WORLD); },
          [&] { MPI_Recv(dev, 1, o.type, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); });
    }
    unsetenv("DTMPI_METHOD");
    runtime::reload_config();
    // manual: whole-span copy to host, MPI_Pack on the host, send; the reverse on arrival
    std::vector<char> host(static_cast<size_t>(o.span));
    char* packed;
    cudaHostAlloc(&packed, static_cast<size_t>(o.bytes), cudaHostAllocDefault);
    auto manual_send = [&] {
      cudaMemcpy(host.data(), dev, static_cast<size_t>(o.span), cudaMemcpyDeviceToHost);
      int pos = 0;
      PMPI_Pack(host.data(), 1, o.type, packed, static_cast<int>(o.bytes), &pos, MPI_COMM_WORLD);
      PMPI_Send(packed, pos, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
    };
    auto manual_recv = [&] {
      PMPI_Recv(packed, static_cast<int>(o.bytes), MPI_PACKED, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int pos = 0;
      PMPI_Unpack(packed, static_cast<int>(o.bytes), &pos, host.data(), 1, o.type, MPI_COMM_WORLD);
      cudaMemcpy(dev, host.data(), static_cast<size_t>(o.span), cudaMemcpyHostToDevice);
    };
    const double t_manual = pingpong(me, budget, manual_send, manual_recv);
    // limit: the packed bytes between pinned host buffers ...
    const double t_host = pingpong(
        me, budget, [&] { PMPI_Send(packed, static_cast<int>(o.bytes), MPI_BYTE, peer, 2, MPI_COMM_WORLD); },
        [&] { PMPI_Recv(packed, static_cast<int>(o.bytes), MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); });
    // ... and GPU to GPU (rank 0 alone; on one GPU a device-to-device copy)
    double t_peer = 0, t_blocks = 0;
    if (me == 0) {
      const int other = ndev > 1 ? 1 : 0;
      void *a, *b;
      cudaMalloc(&a, static_cast<size_t>(o.bytes));
      cudaSetDevice(other);
      cudaMalloc(&b, static_cast<size_t>(o.bytes));
      if (other != mydev) cudaDeviceEnablePeerAccess(mydev, 0);  // NVLink both ways, not through the host
      cudaSetDevice(mydev);
      if (other != mydev) cudaDeviceEnablePeerAccess(other, 0);
      cudaGetLastError();  // "already enabled" after the first object
      auto copy = [&] {
        cudaMemcpyPeer(b, other, a, mydev, static_cast<size_t>(o.bytes));
        cudaDeviceSynchronize();
      };
      copy();
      t_peer = seconds_of(copy, std::clamp(static_cast<int>(budget / std::max(seconds_of(copy, 1), 1e-6)), 3, 1000));
      cudaFree(a);
      cudaSetDevice(other);
      cudaFree(b);
      cudaSetDevice(mydev);
      // per-block baseline: one cudaMemcpy per block out of and back into the GPU
      auto blocks_out_in = [&] {
        int64_t at = 0;
        for (int64_t off : o.block_offsets) {
          cudaMemcpy(packed + at, dev + off, static_cast<size_t>(o.block), cudaMemcpyDeviceToHost);
          at += o.block;
        }
        at = 0;
        for (int64_t off : o.block_offsets) {
          cudaMemcpy(dev + off, packed + at, static_cast<size_t>(o.block), cudaMemcpyHostToDevice);
          at += o.block;
        }
      };
      blocks_out_in();
      t_blocks = seconds_of(blocks_out_in, 2) * static_cast<double>(o.nblocks) /
                 static_cast<double>(o.block_offsets.size());
    }
    PMPI_Bcast(&t_peer, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    PMPI_Bcast(&t_blocks, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    const double t_one_process = t_peer;
    if (one_gpu) {
      const double t_ipc = ipc_copy_pingpong(me, budget, static_cast<size_t>(o.bytes));
      if (t_ipc > 0) t_peer = t_ipc;
    }
    const double t_per_block = t_blocks + t_host;
    const bool scaled = o.nblocks > static_cast<int64_t>(o.block_offsets.size());
    const double limit = std::min(t_host, t_peer);
    if (me == 0) {
      char pb[32];
      std::snprintf(pb, sizeof pb, "%s%.1f", scaled ? "~" : "", t_per_block * 1e6);
      char one[32] = "";
      if (one_gpu) std::snprintf(one, sizeof one, " | %8.1f", t_one_process * 1e6);
      std::printf("%-30s %9.1f %9.1f %9.1f %9.1f %9.1f | %10.1f %11s | %9.1f %9.1f | %7.2fx %8.0fx%s\n",
                  o.name.c_str(), t_method[0] * 1e6, t_method[1] * 1e6, t_method[2] * 1e6, t_method[3] * 1e6,
                  t_method[4] * 1e6, t_manual * 1e6, pb, t_host * 1e6, t_peer * 1e6, t_method[4] / limit,
                  t_per_block / t_method[4], one);
      std::fflush(stdout);
      if (csv)
        std::fprintf(csv, "%s,%lld,%lld,%g,%g,%g,%g,%g,%g,%g,%d,%g,%g,%g\n", o.name.c_str(),
                     static_cast<long long>(o.bytes), static_cast<long long>(o.block), t_method[0], t_method[1],
                     t_method[2], t_method[3], t_method[4], t_manual, t_per_block, scaled ? 1 : 0, t_host, t_peer,
                     t_one_process);
    }
    cudaFreeHost(packed);
    cudaFree(dev);
    MPI_Type_free(&o.type);
  }
  if (csv) std::fclose(csv);
  return 0;
}

}  // namespace dtmpi::bench
