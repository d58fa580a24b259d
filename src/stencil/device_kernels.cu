#include <cuda_runtime.h>

#include "stencil/device_kernels.hpp"

namespace dtmpi::stencil::device {
namespace {

template <class W>
__device__ __forceinline__ void copy_words(char* to, const char* from, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += sizeof(W))
    *reinterpret_cast<W*>(to + b) = *reinterpret_cast<const W*>(from + b);
}

// The grid: x and y index the (row, element) pairs of one z-plane of one
// quantity's region (blockDim.x threads a block, x fastest), blockIdx.z the
// plane and the quantity (q * planes + z, planes = the largest nz of the
// launch). One thread moves one element: a 32-bit division finds its row
// (the region's planes hold fewer than 2^31 elements, launch() checks), where
// the flat one-index-per-element form paid three 64-bit divisions, which
// cost more than the element's bytes (issue 23: the exchange against its
// packed-bytes limit).
__global__ void move_region(Move move, RegionArgs a, unsigned planes) {
  const unsigned q = blockIdx.z / planes, z = blockIdx.z % planes;
  if (z >= a.nz[q]) return;
  const unsigned nx = static_cast<unsigned>(a.nx[q]);
  const unsigned plane = static_cast<unsigned>(a.nx[q] * a.ny[q]);
  const unsigned e2 = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
  if (e2 >= plane) return;
  const unsigned y = e2 / nx, x = e2 - y * nx;
  const int64_t n = a.esize[q];
  char* mem = a.mem[q] + z * a.slice[q] + y * a.pitch[q] + x * n;
  char* other = move == Move::kCopy
                    ? a.other[q] + z * a.other_slice[q] + y * a.other_pitch[q] + x * n
                    : a.other[q] + (static_cast<int64_t>(z) * plane + e2) * n;  // packed: quantity q's bytes, x fastest
  char* to = move == Move::kUnpack ? mem : other;
  const char* from = move == Move::kUnpack ? other : mem;
  if (a.word[q] == 8 && n == 8) {  // the common case (doubles): one load, one store
    *reinterpret_cast<uint64_t*>(to) = *reinterpret_cast<const uint64_t*>(from);
    return;
  }
  switch (a.word[q]) {
    case 8: copy_words<uint64_t>(to, from, n); break;
    case 4: copy_words<uint32_t>(to, from, n); break;
    case 2: copy_words<uint16_t>(to, from, n); break;
    default: copy_words<unsigned char>(to, from, n); break;
  }
}

// The flat form, for a region whose plane holds 2^31 elements or more, or
// more planes than a grid has (z beyond 65535 / quantities): one thread per
// (quantity, point), grid-stride.
__global__ void move_region_flat(Move move, RegionArgs a) {
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
    char* to = move == Move::kUnpack ? mem : other;
    const char* from = move == Move::kUnpack ? other : mem;
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
  constexpr int64_t kMaxGrid = 65535;  // gridDim.y and gridDim.z
  int64_t plane = 0, planes = 0;
  for (int q = 0; q < args.quantities; ++q) {
    plane = args.nx[q] * args.ny[q] > plane ? args.nx[q] * args.ny[q] : plane;
    planes = args.nz[q] > planes ? args.nz[q] : planes;
  }
  const int64_t blocks = (plane + kThreads - 1) / kThreads;
  const auto s = static_cast<cudaStream_t>(stream);
  if (plane < (int64_t{1} << 31) && planes * args.quantities <= kMaxGrid && blocks <= kMaxGrid * kMaxGrid) {
    // blocks of a plane as x (up to 65535) times y
    const int64_t bx = blocks < kMaxGrid ? blocks : kMaxGrid, by = (blocks + bx - 1) / bx;
    move_region<<<dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by),
                       static_cast<unsigned>(planes * args.quantities)),
                  kThreads, 0, s>>>(move, args, static_cast<unsigned>(planes));
  } else {
    const int64_t flat = (total + kThreads - 1) / kThreads;
    move_region_flat<<<static_cast<unsigned>(flat < kMaxGrid ? flat : kMaxGrid), kThreads, 0, s>>>(move, args);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace dtmpi::stencil::device
