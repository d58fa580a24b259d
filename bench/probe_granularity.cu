// dtmpi-probe-granularity: is packing 32 B out of every 512 B bound by DRAM
// access granularity? Ideal gather kernels (no index math beyond a division)
// against a contiguous copy of the same packed bytes. Run on the GPU machine.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void gather(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t nwords, int words_per_block, int pitch_words) {
  for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < nwords; g += (size_t)gridDim.x * blockDim.x) {
    size_t b = g / words_per_block, w = g % words_per_block;
    dst[g] = src[b * pitch_words + w];
  }
}
int main() {
  const size_t packed = 64u << 20;
  uint4 *src, *dst; cudaMalloc(&src, packed * 16 + 4096); cudaMalloc(&dst, packed);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  int cases[][2] = {{512, 512}, {32, 512}, {32, 64}, {64, 512}, {64, 128}, {128, 512}};
  for (auto& c : cases) {
    int blk = c[0], pitch = c[1];
    size_t nwords = packed / 16;
    for (int rep = 0; rep < 2; ++rep) {
      cudaEventRecord(a);
      for (int i = 0; i < 10; ++i) gather<<<132 * 16, 256>>>(src, dst, nwords, blk / 16, pitch / 16);
      cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b);
      if (rep) printf("block %4d pitch %4d: %.1f us, %.0f GB/s (2 x packed)\n", blk, pitch, ms * 100, 2.0 * packed / (ms / 10 * 1e-3) / 1e9);
    }
  }
}
