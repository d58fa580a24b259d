// CUDA pack/unpack kernels.
//
// Strided plans: one thread per W-byte word of the packed stream, W the
// largest of 16/8/4/2/1 that divides the bases, the block and every stride
// (TEMPI ignored the strides and issued misaligned loads). Thread g copies
// word w of block b (g = b * words_per_block + w); b is decomposed over the
// plan's dims, innermost first, so a warp covers consecutive packed words:
// writes coalesce, reads coalesce within and across blocks where the layout
// allows. Kernels are specialised for 0-3 dims with 32-bit index arithmetic
// and fall back to a generic 64-bit version. Grid size is capped (grid-stride
// loop), so no launch exceeds the device's limits.
//
// Irregular plans: the block list (source offset, packed start) is uploaded
// once per device and attached to the plan; each thread finds the block that
// holds its packed word by binary search over the packed starts (Jenkins et
// al.'s prefix-sum search), with no dependence between threads.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "base/cuda_check.hpp"
#include "pack/gpu_pack.hpp"
#include "pack/gpu_layout.cuh"
#include "pack/gpu_strided_offset.cuh"

namespace dtmpi::pack {
namespace detail {

using type::IrregularPlan;
using type::PackPlan;
using type::StridedPlan;

constexpr int64_t kMaxDeviceBlocks = int64_t{1} << 24;

void append_blocks(const StridedPlan& s, std::vector<int64_t>& src, std::vector<int64_t>& start,
                   int64_t& at) {
  if (s.bytes() == 0) return;
  int64_t idx[type::kMaxDims] = {};
  for (int64_t b = 0, n = s.blocks(); b < n; ++b) {
    int64_t off = s.offset;
    for (int d = 0; d < s.ndims; ++d) off += idx[d] * s.dims[d].stride;
    if (!src.empty() && src.back() + (at - start.back()) == off) {
      // touching the previous block: extend it
    } else {
      src.push_back(off);
      start.push_back(at);
    }
    at += s.block;
    for (int d = 0; d < s.ndims; ++d) {
      if (++idx[d] < s.dims[d].count) break;
      idx[d] = 0;
    }
  }
}

Result<DeviceBlockList*> block_list_for(const PackPlan& plan, bool from_strided, int device,
                                        cudaStream_t s) {
  const int key = (from_strided ? 1000 : 0) + device;
  Error failure{0, ""};
  auto* att = plan.attachments->get_or_make(key, [&]() -> std::unique_ptr<type::PlanAttachment> {
    std::vector<int64_t> src, start;
    int64_t at = 0;
    if (from_strided) {
      append_blocks(plan.strided(), src, start, at);
    } else {
      const IrregularPlan& ip = plan.irregular();
      for (const auto& piece : ip.pieces) {
        StridedPlan one = piece.strided < 0 ? StridedPlan{piece.offset, piece.block, 0, {}}
                                            : ip.strided[static_cast<size_t>(piece.strided)];
        append_blocks(one, src, start, at);
        if (static_cast<int64_t>(src.size()) > kMaxDeviceBlocks) {
          failure = Error{kErrTooLarge, "block list too long for the GPU packer"};
          return nullptr;
        }
      }
    }
    auto list = std::make_unique<DeviceBlockList>();
    list->device = device;
    list->nblocks = static_cast<int64_t>(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      const int64_t end = i + 1 < start.size() ? start[i + 1] : at;
      list->align_bits |= static_cast<uint64_t>(src[i]) | static_cast<uint64_t>(end - start[i]);
    }
    const size_t bytes = src.size() * sizeof(int64_t);
    const Status up = [&]() -> Status {
      DTMPI_CUDA_CHECK(cudaMalloc(&list->d_src_off, bytes));
      DTMPI_CUDA_CHECK(cudaMalloc(&list->d_start, bytes));
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(list->d_src_off, src.data(), bytes, cudaMemcpyHostToDevice, s));
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(list->d_start, start.data(), bytes, cudaMemcpyHostToDevice, s));
      DTMPI_CUDA_CHECK(cudaStreamSynchronize(s));
      return ok_status();
    }();
    if (!up) {
      failure = Error{kErrCuda, "uploading a block list failed: " + up.error().what};
      return nullptr;
    }
    return list;
  });
  if (!att) return failure.code ? failure : Error{kErrCuda, "block list unavailable"};
  return static_cast<DeviceBlockList*>(att);
}

Result<BlockListArgs> block_list_args(const PackPlan& plan, bool from_strided, int64_t count, const char* user,
                                      int device, cudaStream_t s, uint64_t& bits, int64_t& total) {
  auto got = block_list_for(plan, from_strided, device, s);
  if (!got) return got.error();
  const DeviceBlockList& list = *got.value();
  BlockListArgs a{};
  a.src_off = list.d_src_off;
  a.start = list.d_start;
  a.nblocks = list.nblocks;
  bits |= list.align_bits | reinterpret_cast<uintptr_t>(user);
  if (from_strided) {
    a.body_bytes = plan.strided().bytes();
    a.offset = 0;
    a.ndims = 0;
  } else {
    const IrregularPlan& ip = plan.irregular();
    a.body_bytes = ip.body_bytes;
    a.offset = ip.outer.offset;
    a.ndims = ip.outer.ndims;
    for (int d = 0; d < ip.outer.ndims; ++d) {
      a.count[d] = ip.outer.dims[d].count;
      a.stride[d] = ip.outer.dims[d].stride;
      bits |= static_cast<uint64_t>(a.stride[d]);
    }
  }
  if (count > 1) {
    a.count[a.ndims] = count;
    a.stride[a.ndims] = plan.extent;
    ++a.ndims;
    bits |= static_cast<uint64_t>(plan.extent);
  }
  bits |= static_cast<uint64_t>(a.offset) | static_cast<uint64_t>(a.body_bytes);
  int64_t outer = 1;
  for (int d = 0; d < a.ndims; ++d) outer *= a.count[d];
  total = count == 0 ? 0 : a.body_bytes * outer;
  return a;
}
}  // namespace detail

namespace {

using namespace detail;
using type::IrregularPlan;
using type::PackPlan;
using type::StridedPlan;

// Each thread moves kUnroll words per iteration, all loads issued before the
// stores, so enough memory requests are in flight to approach bandwidth.
constexpr int kUnroll = 4;

template <typename Word, bool kPack, typename Index, int kDims>
__global__ void __launch_bounds__(kThreads)
    strided_kernel(StridedArgsN<kDims >= 0 ? kDims : type::kMaxDims> a, char* user, char* packed,
                   Index words_per_block, Index first, Index total, Gate gate) {
  pass_gate(gate);
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index g0 = first + static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; g0 < total;
       g0 += step * kUnroll) {
    Word v[kUnroll];
    int64_t off[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const Index g = g0 + static_cast<Index>(u) * step;
      if (g < total) {
        off[u] = strided_offset<Word, Index, kDims>(a, g, words_per_block);
        if constexpr (kPack)
          v[u] = *reinterpret_cast<const Word*>(user + off[u]);
        else
          v[u] = reinterpret_cast<const Word*>(packed)[g];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const Index g = g0 + static_cast<Index>(u) * step;
      if (g < total) {
        if constexpr (kPack)
          reinterpret_cast<Word*>(packed)[g] = v[u];
        else
          *reinterpret_cast<Word*>(user + off[u]) = v[u];
      }
    }
  }
}

template <typename Word, bool kPack>
__global__ void __launch_bounds__(kThreads)
    block_list_kernel(BlockListArgs a, char* user, char* packed, uint64_t first, uint64_t total, Gate gate) {
  pass_gate(gate);
  for (uint64_t g = first + static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < total;
       g += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const int64_t off = block_list_offset(a, static_cast<int64_t>(g * sizeof(Word)));
    Word* u = reinterpret_cast<Word*>(user + off);
    Word* p = reinterpret_cast<Word*>(packed) + g;
    if constexpr (kPack)
      *p = *u;
    else
      *u = *p;
  }
}

// Words [first, total) of the packed stream (the whole of it, or one chunk).
template <typename Word, bool kPack, typename Index, int kDims>
void launch_strided(const StridedArgs& a, char* user, char* packed, uint64_t wpb, uint64_t first, uint64_t total,
                    const Gate& gate, int device, cudaStream_t s) {
  const uint64_t n = total - first;
  strided_kernel<Word, kPack, Index, kDims><<<grid_for((n + kUnroll - 1) / kUnroll, device, gate.word != nullptr), kThreads, 0, s>>>(
      shrink<kDims >= 0 ? kDims : type::kMaxDims>(a), user, packed, static_cast<Index>(wpb), static_cast<Index>(first),
      static_cast<Index>(total), gate);
}

template <typename Word, bool kPack>
void dispatch_dims(const StridedArgs& a, char* user, char* packed, uint64_t wpb, uint64_t first, uint64_t total,
                   const Gate& gate, int device, cudaStream_t s) {
  const bool small = total < (uint64_t{1} << 31);
  if (small && a.ndims == 0) return launch_strided<Word, kPack, uint32_t, 0>(a, user, packed, wpb, first, total, gate, device, s);
  if (small && a.ndims == 1) return launch_strided<Word, kPack, uint32_t, 1>(a, user, packed, wpb, first, total, gate, device, s);
  if (small && a.ndims == 2) return launch_strided<Word, kPack, uint32_t, 2>(a, user, packed, wpb, first, total, gate, device, s);
  if (small && a.ndims == 3) return launch_strided<Word, kPack, uint32_t, 3>(a, user, packed, wpb, first, total, gate, device, s);
  launch_strided<Word, kPack, uint64_t, -1>(a, user, packed, wpb, first, total, gate, device, s);
}

// `range` (bytes of this plan's packed stream, `packed` its start) must lie
// within the stream; the word size also divides the range's ends.
template <bool kPack>
Status run_strided(const StridedPlan& p, char* user, char* packed, int device, cudaStream_t s, const Gate& gate = {},
                   type::PackedRange range = {}) {
  if (p.bytes() == 0) return ok_status();
  const int64_t end = range.end_in(p.bytes());
  if (range.first >= end) return ok_status();
  StridedArgs a{};
  a.offset = p.offset;
  a.ndims = p.ndims;
  for (int d = 0; d < p.ndims; ++d) {
    a.count[d] = p.dims[d].count;
    a.stride[d] = p.dims[d].stride;
  }
  const int w = std::min(strided_word_size(p, user, packed),
                         word_for(static_cast<uint64_t>(range.first) | static_cast<uint64_t>(end)));
  const uint64_t wpb = static_cast<uint64_t>(p.block / w);
  const uint64_t first = static_cast<uint64_t>(range.first / w), total = static_cast<uint64_t>(end / w);
  switch (w) {
    case 16: dispatch_dims<uint4, kPack>(a, user, packed, wpb, first, total, gate, device, s); break;
    case 8: dispatch_dims<uint2, kPack>(a, user, packed, wpb, first, total, gate, device, s); break;
    case 4: dispatch_dims<uint32_t, kPack>(a, user, packed, wpb, first, total, gate, device, s); break;
    case 2: dispatch_dims<uint16_t, kPack>(a, user, packed, wpb, first, total, gate, device, s); break;
    default: dispatch_dims<uint8_t, kPack>(a, user, packed, wpb, first, total, gate, device, s); break;
  }
  DTMPI_CUDA_CHECK(cudaGetLastError());
  return ok_status();
}

template <bool kPack>
Status run_block_list(const PackPlan& plan, bool from_strided, int64_t count, char* user,
                      char* packed, int device, cudaStream_t s, const Gate& gate = {}, type::PackedRange range = {}) {
  uint64_t bits = reinterpret_cast<uintptr_t>(packed);
  int64_t whole = 0;
  auto args = block_list_args(plan, from_strided, count, user, device, s, bits, whole);
  if (!args) return args.error();
  const BlockListArgs& a = args.value();
  if (whole == 0) return ok_status();
  const int64_t end = range.end_in(whole);
  if (range.first >= end) return ok_status();
  bits |= static_cast<uint64_t>(range.first) | static_cast<uint64_t>(end);
  const int w = word_for(bits);
  const uint64_t first = static_cast<uint64_t>(range.first / w), total = static_cast<uint64_t>(end / w);
  const unsigned grid = grid_for(total - first, device, gate.word != nullptr);
  switch (w) {
    case 16: block_list_kernel<uint4, kPack><<<grid, kThreads, 0, s>>>(a, user, packed, first, total, gate); break;
    case 8: block_list_kernel<uint2, kPack><<<grid, kThreads, 0, s>>>(a, user, packed, first, total, gate); break;
    case 4: block_list_kernel<uint32_t, kPack><<<grid, kThreads, 0, s>>>(a, user, packed, first, total, gate); break;
    case 2: block_list_kernel<uint16_t, kPack><<<grid, kThreads, 0, s>>>(a, user, packed, first, total, gate); break;
    default: block_list_kernel<uint8_t, kPack><<<grid, kThreads, 0, s>>>(a, user, packed, first, total, gate); break;
  }
  DTMPI_CUDA_CHECK(cudaGetLastError());
  return ok_status();
}

template <bool kPack>
Status run(const PackPlan& plan, int64_t count, const void* user_c, void* packed, int device,
           cudaStream_t s, const Gate& gate = {}, type::PackedRange range = {}) {
  char* user = static_cast<char*>(const_cast<void*>(user_c));
  char* out = static_cast<char*>(packed);
  if (count == 0) return ok_status();
  if (plan.is_strided()) {
    StridedPlan whole;
    if (plan.strided_for_count(count, whole)) return run_strided<kPack>(whole, user, out, device, s, gate, range);
    // no dim left for the count: one launch per element the range touches
    const int64_t end = range.end_in(count * plan.size);
    for (int64_t k = 0; k < count; ++k, out += plan.size) {
      const int64_t lo = std::max<int64_t>(range.first - k * plan.size, 0);
      const int64_t hi = std::min<int64_t>(end - k * plan.size, plan.size);
      if (lo >= hi) continue;
      DTMPI_TRY(run_strided<kPack>(plan.strided(), user + k * plan.extent, out, device, s, gate,
                                   type::PackedRange{lo, hi - lo}));
    }
    return ok_status();
  }
  return run_block_list<kPack>(plan, false, count, user, out, device, s, gate, range);
}

}  // namespace

int strided_word_size(const StridedPlan& p, const void* user, const void* packed) {
  uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(user) + static_cast<uint64_t>(p.offset)) |
                  reinterpret_cast<uintptr_t>(packed) | static_cast<uint64_t>(p.block);
  for (int d = 0; d < p.ndims; ++d) bits |= static_cast<uint64_t>(p.dims[d].stride);
  return word_for(bits);
}

Status pack_device(const PackPlan& plan, int64_t count, const void* user, void* packed, int device,
                   GpuStream stream, type::PackedRange range) {
  return run<true>(plan, count, user, packed, device, stream, {}, range);
}

Status unpack_device(const PackPlan& plan, int64_t count, const void* packed, void* user, int device,
                     GpuStream stream, Gate gate, type::PackedRange range) {
  return run<false>(plan, count, user, const_cast<void*>(packed), device, stream, gate, range);
}

Status pack_device_as_block_list(const PackPlan& plan, int64_t count, const void* user, void* packed,
                                 int device, GpuStream stream) {
  if (!plan.is_strided()) return pack_device(plan, count, user, packed, device, stream);
  return run_block_list<true>(plan, true, count, static_cast<char*>(const_cast<void*>(user)),
                              static_cast<char*>(packed), device, stream);
}

}  // namespace dtmpi::pack
