// dtmpi-probe-launch: host-side cost of the CUDA calls a GPU transfer makes
// (what the fixed microseconds of a small message are made of). Median of
// 2000 calls each, with the stream drained between rounds. Run on the GPU machine.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

__global__ void empty_kernel() {}

// A 16-byte-word copy; with `flag`, the last thread block to finish raises it
// (system-scope release after a fence), with no stream operation after the kernel.
__global__ void copy_kernel(const uint4* src, uint4* dst, size_t n, unsigned* blocks_done, volatile unsigned* flag,
                            unsigned value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
  if (!flag) return;
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(blocks_done, 1u) == gridDim.x - 1) {
    *blocks_done = 0;
    __threadfence_system();
    *flag = value;
  }
}
struct Args {
  long long v[24];
};
__global__ void args_kernel(Args a, char* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && a.v[0] == 12345) *p = 1;
}

double median_us(const std::function<void()>& f, cudaStream_t s) {
  std::vector<double> t;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 100; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    cudaStreamSynchronize(s);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

int main() {
  cudaSetDevice(0);
  cudaFree(nullptr);
  cudaStream_t nb, blk;
  cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&blk, cudaStreamDefault);
  char *a, *b;
  cudaMalloc(&a, 1 << 20);
  cudaMalloc(&b, 1 << 20);
  cudaEvent_t ev, ipc_ev;
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&ipc_ev, cudaEventDisableTiming | cudaEventInterprocess);
  CUdeviceptr word = reinterpret_cast<CUdeviceptr>(b);
  Args args{};
  struct Row {
    const char* what;
    std::function<void()> f;
    cudaStream_t s;
  };
  std::vector<Row> rows = {
      {"empty kernel, non-blocking stream", [&] { empty_kernel<<<1, 32, 0, nb>>>(); }, nb},
      {"empty kernel, blocking stream", [&] { empty_kernel<<<1, 32, 0, blk>>>(); }, blk},
      {"192-B argument kernel, 2112 blocks", [&] { args_kernel<<<2112, 256, 0, nb>>>(args, a); }, nb},
      {"kernel + cudaGetLastError", [&] { empty_kernel<<<1, 32, 0, nb>>>(); (void)cudaGetLastError(); }, nb},
      {"cudaMemcpyAsync D2D 1 KiB", [&] { cudaMemcpyAsync(a, b, 1024, cudaMemcpyDefault, nb); }, nb},
      {"cudaEventRecord", [&] { cudaEventRecord(ev, nb); }, nb},
      {"cudaEventRecord (interprocess event)", [&] { cudaEventRecord(ipc_ev, nb); }, nb},
      {"cudaStreamWaitEvent", [&] { cudaStreamWaitEvent(nb, ev, 0); }, nb},
      {"cudaEventQuery", [&] { (void)cudaEventQuery(ev); }, nb},
      {"cuStreamWriteValue64", [&] { cuStreamWriteValue64(reinterpret_cast<CUstream>(nb), word, 0, 0); }, nb},
      {"cuStreamWaitValue64 (satisfied)", [&] { cuStreamWaitValue64(reinterpret_cast<CUstream>(nb), word, 0, 0); }, nb},
      {"cudaGetDevice", [&] { int d; cudaGetDevice(&d); }, nb},
      {"cudaPointerGetAttributes", [&] { cudaPointerAttributes pa; cudaPointerGetAttributes(&pa, a); }, nb},
  };
  std::printf("%-40s %8s\n", "call (host side)", "us");
  for (auto& r : rows) std::printf("%-40s %8.2f\n", r.what, median_us(r.f, r.s));
  // end to end: launch + wait for an empty kernel
  std::printf("%-40s %8.2f\n", "empty kernel + cudaStreamSynchronize", median_us([&] {
                empty_kernel<<<1, 32, 0, nb>>>();
                cudaStreamSynchronize(nb);
              }, nb));
  // end to end: when a host spinning on a mapped flag sees a 1 MiB copy kernel
  // done, the flag raised by a stream operation after it or by the kernel itself
  unsigned* host_flag;
  cudaHostAlloc(&host_flag, sizeof(unsigned), cudaHostAllocMapped);
  unsigned* dev_flag;
  cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), host_flag, 0);
  unsigned* blocks_done;
  cudaMalloc(&blocks_done, sizeof(unsigned));
  cudaMemset(blocks_done, 0, sizeof(unsigned));
  *reinterpret_cast<volatile unsigned*>(host_flag) = 0;
  unsigned seq = 0;
  const size_t words = (1 << 20) / 16;
  auto spin = [&](unsigned v) {
    while (*reinterpret_cast<volatile unsigned*>(host_flag) != v) {
    }
  };
  for (unsigned grid : {64u, 264u}) {
    std::printf("copy 1 MiB (%3u blocks) + cuStreamWriteValue32, host sees flag  %8.2f\n", grid, median_us([&] {
                  copy_kernel<<<grid, 256, 0, nb>>>(reinterpret_cast<uint4*>(a), reinterpret_cast<uint4*>(b), words,
                                                    nullptr, nullptr, 0);
                  cuStreamWriteValue32(reinterpret_cast<CUstream>(nb), reinterpret_cast<CUdeviceptr>(dev_flag), ++seq, 0);
                  spin(seq);
                }, nb));
    std::printf("copy 1 MiB (%3u blocks) raising the flag itself, host sees it    %8.2f\n", grid, median_us([&] {
                  copy_kernel<<<grid, 256, 0, nb>>>(reinterpret_cast<uint4*>(a), reinterpret_cast<uint4*>(b), words,
                                                    blocks_done, dev_flag, ++seq);
                  spin(seq);
                }, nb));
  }
  std::printf("%-40s %8.2f\n", "empty kernel + cuStreamWriteValue32, spin", median_us([&] {
                empty_kernel<<<1, 32, 0, nb>>>();
                cuStreamWriteValue32(reinterpret_cast<CUstream>(nb), reinterpret_cast<CUdeviceptr>(dev_flag), ++seq, 0);
                spin(seq);
              }, nb));
  // a kernel on stream B gated on a word that stream A's work raises: by a
  // stream write after A's copy, or by A's copy kernel itself
  cudaStream_t nb2;
  cudaStreamCreateWithFlags(&nb2, cudaStreamNonBlocking);
  // A's copy raises the word by a stream write after it, or by itself
  auto chain = [&](bool kernel_raises) {
    ++seq;
    cuStreamWaitValue32(reinterpret_cast<CUstream>(nb2), reinterpret_cast<CUdeviceptr>(dev_flag), seq,
                        CU_STREAM_WAIT_VALUE_GEQ);
    copy_kernel<<<64, 256, 0, nb2>>>(reinterpret_cast<uint4*>(b), reinterpret_cast<uint4*>(a), words, nullptr,
                                     nullptr, 0);
    cudaEventRecord(ev, nb2);
    copy_kernel<<<64, 256, 0, nb>>>(reinterpret_cast<uint4*>(a), reinterpret_cast<uint4*>(b), words,
                                    kernel_raises ? blocks_done : nullptr, kernel_raises ? dev_flag : nullptr,
                                    kernel_raises ? seq : 0);
    if (!kernel_raises)
      cuStreamWriteValue32(reinterpret_cast<CUstream>(nb), reinterpret_cast<CUdeviceptr>(dev_flag), seq, 0);
    cudaEventSynchronize(ev);
  };
  std::printf("%-40s %8.2f\n", "copy(A) + write(A) -> wait(B) + copy(B)", median_us([&] { chain(false); }, nb));
  std::printf("%-40s %8.2f\n", "copy(A) raising -> wait(B) + copy(B)", median_us([&] { chain(true); }, nb));
  return 0;
}
