// One kernel launch for many (buffer, type) pieces: the collectives pack all
// outgoing pieces of a call (and unpack all incoming ones) at once instead of
// one launch per piece (TEMPI launched per piece).
//
// Each piece whose layout is strided with at most kBatchDims dims for its
// count becomes one entry of the launch's parameter block; entries hold their
// first word in the launch's combined word space, and a thread finds its
// entry by binary search, then its offset as the single-piece strided kernel
// does. The word size is the largest dividing every entry's addresses,
// blocks and strides. Other pieces (irregular plans, more dims) are packed
// one launch each, in the same stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "base/cuda_check.hpp"
#include "pack/gpu_pack.hpp"
#include "pack/gpu_strided_offset.cuh"

namespace dtmpi::pack {
namespace {

constexpr int kThreads = 256;
constexpr int kBatchDims = 3;
constexpr int kBatchMax = kPiecesPerLaunch;
constexpr int kUnroll = 4;

struct BatchEntry {
  int64_t offset;  // always 0: the piece's strided offset is in `user` (strided_offset reads it)
  char* user;      // user buffer + the piece's strided offset
  char* packed;
  uint64_t first;  // first word of this entry in the launch's word space
  uint64_t words_per_block;
  int32_t ndims;
  int64_t count[kBatchDims];
  int64_t stride[kBatchDims];
};

struct BatchArgs {
  int n;
  uint64_t total;
  BatchEntry e[kBatchMax];
};

// Index: uint32_t when every word number and count of the launch fits (32-bit
// division is several times cheaper than 64-bit on the GPU), else uint64_t.
template <typename Word, typename Index>
__device__ __forceinline__ void locate(const BatchArgs& a, Index g, Word*& user, Word*& packed) {
  int lo = 0, hi = a.n - 1;  // last entry whose first word <= g
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (static_cast<Index>(a.e[mid].first) <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  const BatchEntry& e = a.e[lo];
  const Index local = g - static_cast<Index>(e.first);
  const int64_t off = strided_offset<Word, Index, -1>(e, local, static_cast<Index>(e.words_per_block));
  user = reinterpret_cast<Word*>(e.user + off);
  packed = reinterpret_cast<Word*>(e.packed) + local;
}

template <typename Word, bool kPack, typename Index>
__global__ void __launch_bounds__(kThreads) batch_kernel(BatchArgs a) {
  const Index total = static_cast<Index>(a.total);
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index g0 = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; g0 < total; g0 += step * kUnroll) {
    Word v[kUnroll];
    Word* dst[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const Index g = g0 + static_cast<Index>(u) * step;
      if (g < total) {
        Word *user, *packed;
        locate(a, g, user, packed);
        v[u] = kPack ? *user : *packed;
        dst[u] = kPack ? packed : user;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (g0 + static_cast<Index>(u) * step < total) *dst[u] = v[u];
  }
}

unsigned batch_grid(uint64_t total, int device) {
  int sms = 0;
  if (!DTMPI_CUDA_PROBE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) || sms <= 0) sms = 32;
  const uint64_t want = (total / kUnroll + kThreads) / kThreads;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, static_cast<uint64_t>(sms) * 16)));
}

template <typename Word, bool kPack>
void launch_words(const BatchArgs& a, unsigned grid, cudaStream_t s) {
  // 32-bit indices while every word number (with a grid's stride of slack) fits
  const uint64_t slack = uint64_t{grid} * kThreads * kUnroll;
  if (a.total + slack < (uint64_t{1} << 32))
    batch_kernel<Word, kPack, uint32_t><<<grid, kThreads, 0, s>>>(a);
  else
    batch_kernel<Word, kPack, uint64_t><<<grid, kThreads, 0, s>>>(a);
}

template <bool kPack>
Status launch_batch(BatchArgs& a, uint64_t bits, int device, cudaStream_t s) {
  int w = 16;
  while (w > 1 && (bits & static_cast<uint64_t>(w - 1)) != 0) w /= 2;
  a.total = 0;
  for (int i = 0; i < a.n; ++i) {  // bytes -> words
    BatchEntry& e = a.e[i];
    const uint64_t bytes = e.first;  // the caller stored the entry's byte count here
    e.words_per_block /= static_cast<uint64_t>(w);
    e.first = a.total;
    a.total += bytes / static_cast<uint64_t>(w);
  }
  if (a.total == 0) return ok_status();
  const unsigned grid = batch_grid(a.total, device);
  switch (w) {
    case 16: launch_words<uint4, kPack>(a, grid, s); break;
    case 8: launch_words<uint2, kPack>(a, grid, s); break;
    case 4: launch_words<uint32_t, kPack>(a, grid, s); break;
    case 2: launch_words<uint16_t, kPack>(a, grid, s); break;
    default: launch_words<uint8_t, kPack>(a, grid, s); break;
  }
  DTMPI_CUDA_CHECK(cudaGetLastError());
  return ok_status();
}

template <bool kPack>
Status run_pieces(const DevicePiece* pieces, size_t n, int device, cudaStream_t s, int* launches) {
  BatchArgs a{};
  uint64_t bits = 0;
  int count_launches = 0;
  for (size_t i = 0; i < n; ++i) {
    const DevicePiece& p = pieces[i];
    if (p.count <= 0 || p.plan->size == 0) continue;
    type::StridedPlan whole;
    if (!p.plan->is_strided() || !p.plan->strided_for_count(p.count, whole) || whole.ndims > kBatchDims) {
      DTMPI_TRY(kPack ? pack_device(*p.plan, p.count, p.user, p.packed, device, s)
                      : unpack_device(*p.plan, p.count, p.packed, p.user, device, s));
      ++count_launches;
      continue;
    }
    if (whole.bytes() == 0) continue;
    BatchEntry& e = a.e[a.n++];
    e.user = static_cast<char*>(p.user) + whole.offset;
    e.packed = static_cast<char*>(p.packed);
    e.first = static_cast<uint64_t>(whole.bytes());
    e.words_per_block = static_cast<uint64_t>(whole.block);
    e.ndims = whole.ndims;
    bits |= reinterpret_cast<uintptr_t>(e.user) | reinterpret_cast<uintptr_t>(e.packed) |
            static_cast<uint64_t>(whole.block);
    for (int d = 0; d < whole.ndims; ++d) {
      e.count[d] = whole.dims[d].count;
      e.stride[d] = whole.dims[d].stride;
      bits |= static_cast<uint64_t>(whole.dims[d].stride);
    }
    if (a.n == kBatchMax) {
      DTMPI_TRY(launch_batch<kPack>(a, bits, device, s));
      ++count_launches;
      a.n = 0;
      bits = 0;
    }
  }
  if (a.n > 0) {
    DTMPI_TRY(launch_batch<kPack>(a, bits, device, s));
    ++count_launches;
  }
  if (launches) *launches = count_launches;
  return ok_status();
}

}  // namespace

Status pack_pieces_device(const DevicePiece* pieces, size_t n, int device, GpuStream stream, int* launches) {
  return run_pieces<true>(pieces, n, device, stream, launches);
}

Status unpack_pieces_device(const DevicePiece* pieces, size_t n, int device, GpuStream stream, int* launches) {
  return run_pieces<false>(pieces, n, device, stream, launches);
}

}  // namespace dtmpi::pack
