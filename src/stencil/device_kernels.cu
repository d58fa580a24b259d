#include <cuda_runtime.h>

#include "stencil/device_kernels.hpp"

namespace dtmpi::stencil::device {
namespace {

template <class W>
__device__ void copy_words(char* to, const char* from, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += sizeof(W))
    *reinterpret_cast<W*>(to + b) = *reinterpret_cast<const W*>(from + b);
}

// One thread per (quantity, point) of the region; grid-stride.
__global__ void move_region(Move move, RegionArgs a) {
  const int64_t total = a.first[a.quantities];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int q = 0;
    while (i >= a.first[q + 1]) ++q;
    const int64_t e = i - a.first[q], x = e % a.nx[q], y = (e / a.nx[q]) % a.ny[q], z = e / (a.nx[q] * a.ny[q]);
    const int64_t n = a.esize[q];
    char* mem = a.mem[q] + z * a.slice[q] + y * a.pitch[q] + x * n;
    char* other = move == Move::kCopy ? a.other[q] + z * a.other_slice[q] + y * a.other_pitch[q] + x * n
                                      : a.other[q] + e * n;
    char* to = move == Move::kPack ? other : move == Move::kUnpack ? mem : other;
    const char* from = move == Move::kPack ? mem : move == Move::kUnpack ? other : mem;
    switch (a.word[q]) {
      case 8: copy_words<uint64_t>(to, from, n); break;
      case 4: copy_words<uint32_t>(to, from, n); break;
      case 2: copy_words<uint16_t>(to, from, n); break;
      default: copy_words<unsigned char>(to, from, n); break;
    }
  }
}

}  // namespace

int launch(Move move, const RegionArgs& args, void* stream) {
  const int64_t total = args.first[args.quantities];
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  move_region<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      move, args);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace dtmpi::stencil::device
