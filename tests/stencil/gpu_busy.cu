// A kernel that holds every thread slot of the GPU for a while, so that work
// queued after it on other streams (the exchange's packs) cannot start yet:
// what a long interior kernel of a program does to an overlapped exchange.
#include "gpu_busy.hpp"

#include <cuda_runtime.h>

namespace stencil_check {
namespace {

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold(unsigned long long ns) {
  const unsigned long long start = now_ns();
  while (now_ns() - start < ns) __nanosleep(1000);
}

}  // namespace

int occupy_gpu(double ms, void* stream) {
  int device = 0, sms = 0, threads = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  if (e != cudaSuccess) return static_cast<int>(e);
  // blocks of 256 threads filling every SM's thread slots (2048 on H100 /
  // H200, 1536 on others: both multiples of 256), all resident at once
  constexpr int kBlock = 256;
  const int blocks = sms * (threads / kBlock > 0 ? threads / kBlock : 1);
  hold<<<blocks, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<unsigned long long>(ms * 1e6));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace stencil_check
