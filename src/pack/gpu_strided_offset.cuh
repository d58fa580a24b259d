// The address arithmetic shared by the strided and the batched CUDA kernels
// (device code; included by the .cu files of src/pack only).
#pragma once
#include <cstdint>

#include "type/plan.hpp"

namespace dtmpi::pack {

// User offset of packed word g (block b = g / words_per_block, word w).
// Args: offset, ndims, count[], stride[] (dims innermost first); kDims >= 0
// fixes the number of dims at compile time, -1 reads a.ndims.
template <typename Word, typename Index, int kDims, typename Args>
__device__ __forceinline__ int64_t strided_offset(const Args& a, Index g, Index words_per_block) {
  const int nd = kDims >= 0 ? kDims : a.ndims;
  Index blk = g / words_per_block;
  const Index w = g - blk * words_per_block;
  int64_t off = a.offset + static_cast<int64_t>(w) * static_cast<int64_t>(sizeof(Word));
#pragma unroll
  for (int d = 0; d < (kDims >= 0 ? kDims : type::kMaxDims); ++d) {
    if (d >= nd) break;
    if (d == nd - 1) {  // the outermost dim needs no modulo
      off += static_cast<int64_t>(blk) * a.stride[d];
    } else {
      const Index c = static_cast<Index>(a.count[d]);
      const Index q = blk / c;
      off += static_cast<int64_t>(blk - q * c) * a.stride[d];
      blk = q;
    }
  }
  return off;
}

}  // namespace dtmpi::pack
