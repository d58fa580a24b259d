// One kernel from one layout to another (pack/gpu_pack.hpp: copy_layout_device):
// thread g moves word g of the packed stream from its place in the source
// layout to its place in the destination layout, each side's place found as
// the pack kernels find it (the strided arithmetic, or the block-list search),
// so no packed copy is ever written (issue 21: an RMA put or get between two
// non-contiguous layouts on mapped GPU memory, one launch, half the memory
// traffic of a pack and an unpack through a buffer).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "base/cuda_check.hpp"
#include "pack/gpu_layout.cuh"
#include "pack/gpu_pack.hpp"
#include "pack/gpu_strided_offset.cuh"

namespace dtmpi::pack {
namespace {

using namespace detail;
using type::PackPlan;
using type::StridedPlan;

constexpr int kUnrollCopy = 4;

template <typename Word>
__global__ void __launch_bounds__(kThreads)
    transcode_kernel(LayoutArgs src_args, LayoutArgs dst_args, const char* src, char* dst, uint64_t total) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t g0 = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g0 < total;
       g0 += step * kUnrollCopy) {
    Word v[kUnrollCopy];
    // every load issued before the stores: enough requests in flight
#pragma unroll
    for (int u = 0; u < kUnrollCopy; ++u) {
      const uint64_t g = g0 + static_cast<uint64_t>(u) * step;
      if (g < total) v[u] = *reinterpret_cast<const Word*>(src + offset_of<Word>(src_args, g));
    }
#pragma unroll
    for (int u = 0; u < kUnrollCopy; ++u) {
      const uint64_t g = g0 + static_cast<uint64_t>(u) * step;
      if (g < total) *reinterpret_cast<Word*>(dst + offset_of<Word>(dst_args, g)) = v[u];
    }
  }
}

}  // namespace

namespace detail {

// (gpu_layout.cuh)
Result<LayoutArgs> layout_args(const PackPlan& plan, int64_t count, const char* base, int device, cudaStream_t s,
                               uint64_t& bits, int64_t& bytes) {
  LayoutArgs a{};
  StridedPlan whole;
  if (plan.is_strided() && plan.strided_for_count(count, whole)) {
    a.strided = true;
    a.s.offset = whole.offset;
    a.s.ndims = whole.ndims;
    for (int d = 0; d < whole.ndims; ++d) {
      a.s.count[d] = whole.dims[d].count;
      a.s.stride[d] = whole.dims[d].stride;
    }
    bits |= static_cast<uint64_t>(strided_word_size(whole, base, nullptr));  // a power of two <= 16
    a.words_per_block = static_cast<uint64_t>(whole.block);                  // divided by the word size below
    bytes = whole.bytes();
    return a;
  }
  a.strided = false;
  auto b = block_list_args(plan, plan.is_strided(), count, base, device, s, bits, bytes);
  if (!b) return b.error();
  a.b = b.value();
  return a;
}

}  // namespace detail

Status copy_layout_device(const PackPlan& src_plan, int64_t src_count, const void* src, const PackPlan& dst_plan,
                          int64_t dst_count, void* dst, int64_t bytes, int device, GpuStream stream) {
  if (bytes <= 0 || src_count <= 0 || dst_count <= 0) return ok_status();
  uint64_t src_bits = 0, dst_bits = 0;
  int64_t src_bytes = 0, dst_bytes = 0;
  auto sa = layout_args(src_plan, src_count, static_cast<const char*>(src), device, stream, src_bits, src_bytes);
  if (!sa) return sa.error();
  auto da = layout_args(dst_plan, dst_count, static_cast<const char*>(dst), device, stream, dst_bits, dst_bytes);
  if (!da) return da.error();
  if (bytes > src_bytes || bytes > dst_bytes)
    return Error{kErrUnsupported, "copy_layout_device: more bytes than a layout holds"};
  // the word divides what both sides allow and the byte count
  const int w = std::min({layout_word(sa.value(), src_bits), layout_word(da.value(), dst_bits),
                          word_for(static_cast<uint64_t>(bytes))});
  for (LayoutArgs* a : {&sa.value(), &da.value()})
    if (a->strided) a->words_per_block /= static_cast<uint64_t>(w);
  const uint64_t total = static_cast<uint64_t>(bytes / w);
  const unsigned grid = grid_for((total + kUnrollCopy - 1) / kUnrollCopy, device);
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  switch (w) {
    case 16: transcode_kernel<uint4><<<grid, kThreads, 0, stream>>>(sa.value(), da.value(), s, d, total); break;
    case 8: transcode_kernel<uint2><<<grid, kThreads, 0, stream>>>(sa.value(), da.value(), s, d, total); break;
    case 4: transcode_kernel<uint32_t><<<grid, kThreads, 0, stream>>>(sa.value(), da.value(), s, d, total); break;
    case 2: transcode_kernel<uint16_t><<<grid, kThreads, 0, stream>>>(sa.value(), da.value(), s, d, total); break;
    default: transcode_kernel<uint8_t><<<grid, kThreads, 0, stream>>>(sa.value(), da.value(), s, d, total); break;
  }
  DTMPI_CUDA_CHECK(cudaGetLastError());
  return ok_status();
}

}  // namespace dtmpi::pack
