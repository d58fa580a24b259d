// What the CUDA pack kernels (gpu_pack.cu) and the layout-to-layout copy
// kernel (gpu_transcode.cu) share: kernel parameters for both plan kinds, the
// address arithmetic of a block list, launch sizing, the word size, and an
// irregular plan's block list uploaded to a device. Device code; included by
// the .cu files of src/pack only.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "base/cuda_check.hpp"
#include "pack/gpu_pack.hpp"
#include "pack/gpu_strided_offset.cuh"
#include "type/plan.hpp"

namespace dtmpi::pack::detail {

constexpr int kThreads = 256;
constexpr int kMaxOuter = type::kMaxDims + 1;  // plan dims + the count

// Kernel parameters sized for the dims in use (a smaller parameter block
// launches faster): N = kDims for the specialised kernels, kMaxDims otherwise.
template <int N>
struct StridedArgsN {
  int64_t offset;
  int ndims;
  int64_t count[N > 0 ? N : 1];
  int64_t stride[N > 0 ? N : 1];
};
using StridedArgs = StridedArgsN<type::kMaxDims>;

template <int N>
inline StridedArgsN<N> shrink(const StridedArgs& a) {
  StridedArgsN<N> b{};
  b.offset = a.offset;
  b.ndims = a.ndims;
  for (int d = 0; d < N && d < a.ndims; ++d) {
    b.count[d] = a.count[d];
    b.stride[d] = a.stride[d];
  }
  return b;
}

// The gate (gpu_pack.hpp): every thread block waits for the producer's counter.
__device__ __forceinline__ void pass_gate(const Gate& gate) {
  if (!gate.word) return;
  if (threadIdx.x == 0) {
    const auto* w = static_cast<const unsigned long long*>(gate.word);
    for (;;) {
      unsigned long long v;
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(w) : "memory");
      if (static_cast<int64_t>(v - gate.value) >= 0) break;
      __nanosleep(200);
    }
  }
  __syncthreads();
}

struct BlockListArgs {
  const int64_t* src_off;  // per block, relative to the body origin
  const int64_t* start;    // per block, packed offset within one body
  int64_t nblocks;
  int64_t body_bytes;
  int64_t offset;          // outer offset
  int ndims;               // outer dims (incl. the count)
  int64_t count[kMaxOuter];
  int64_t stride[kMaxOuter];
};

// User offset of the packed byte `pos` (a multiple of the word size) of a
// block list: the body it falls in, the last block whose packed start is at or
// below it (binary search: Jenkins et al.'s prefix-sum search), then the
// outer dims.
__device__ __forceinline__ int64_t block_list_offset(const BlockListArgs& a, int64_t pos) {
  int64_t body = pos / a.body_bytes;
  const int64_t r = pos - body * a.body_bytes;
  int64_t lo = 0, hi = a.nblocks - 1;  // last block whose start <= r
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) >> 1;
    if (__ldg(&a.start[mid]) <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  int64_t off = a.offset + __ldg(&a.src_off[lo]) + (r - __ldg(&a.start[lo]));
  for (int d = 0; d < a.ndims; ++d) {
    const int64_t q = body / a.count[d];
    off += (body - q * a.count[d]) * a.stride[d];
    body = q;
  }
  return off;
}

inline int sm_count(int device) {
  static int cached[64] = {};
  if (device < 0 || device >= 64) return 32;
  if (cached[device] == 0) {
    int n = 0;
    if (!DTMPI_CUDA_PROBE(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device)) || n <= 0)
      n = 32;
    cached[device] = n;
  }
  return cached[device];
}

// A gated kernel (one waiting for a peer's counter) is capped at
// kGatedBlocksPerSm thread blocks per SM: its blocks hold their SM slots while
// they wait, and a full grid of them would keep every other kernel of this
// GPU -- this rank's own packs, which the late peer may itself be waiting
// for -- from starting until the gate opens. A quarter of the SM's threads
// still keeps enough loads in flight for reads over NVLink.
constexpr int kGatedBlocksPerSm = 2;

inline unsigned grid_for(uint64_t total, int device, bool gated = false) {
  const uint64_t want = (total + kThreads - 1) / kThreads;
  const uint64_t cap = static_cast<uint64_t>(sm_count(device)) * (gated ? kGatedBlocksPerSm : 16);
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min(want, cap)));
}

// Largest power of two <= 16 dividing every value OR-ed into `bits`.
inline int word_for(uint64_t bits) {
  for (int w = 16; w > 1; w /= 2)
    if ((bits & static_cast<uint64_t>(w - 1)) == 0) return w;
  return 1;
}

// An irregular plan's body as a flat block list in device memory.
struct DeviceBlockList : type::PlanAttachment {
  int device = -1;
  int64_t* d_src_off = nullptr;
  int64_t* d_start = nullptr;
  int64_t nblocks = 0;
  uint64_t align_bits = 0;  // OR of every offset and length: for the word size
  ~DeviceBlockList() override {
    if (d_src_off) cudaFree(d_src_off);  // errors ignored: may run after CUDA teardown
    if (d_start) cudaFree(d_start);
  }
};

// The block list of `count` elements of `plan` (`from_strided`: a strided
// plan taken as a block list) on `device`, uploaded on first use and kept with
// the plan.
Result<DeviceBlockList*> block_list_for(const type::PackPlan& plan, bool from_strided, int device, cudaStream_t s);
// Kernel arguments for `count` elements of `plan` as a block list at `user`;
// `bits` gets every offset, length and stride OR-ed in (for the word size),
// `total` the packed bytes.
Result<BlockListArgs> block_list_args(const type::PackPlan& plan, bool from_strided, int64_t count, const char* user,
                                      int device, cudaStream_t s, uint64_t& bits, int64_t& total);

// One side: a strided plan for the whole count, else a block list.
struct LayoutArgs {
  bool strided;
  StridedArgs s;
  uint64_t words_per_block;  // strided: block / word size
  BlockListArgs b;
};

// User offset of packed word g (Word-sized) of a side.
template <typename Word>
__device__ __forceinline__ int64_t offset_of(const LayoutArgs& a, uint64_t g) {
  if (a.strided) return strided_offset<Word, uint64_t, -1>(a.s, g, a.words_per_block);
  return block_list_offset(a.b, static_cast<int64_t>(g * sizeof(Word)));
}

// `count` elements of `plan` at `base` as kernel arguments (LayoutArgs);
// `bits`: a strided side's word size (a power of two), a block list's
// offsets, lengths and strides OR-ed (word_for gives its word size); `bytes`:
// the packed bytes. The caller divides words_per_block by the word it uses.
Result<LayoutArgs> layout_args(const type::PackPlan& plan, int64_t count, const char* base, int device, cudaStream_t s,
                               uint64_t& bits, int64_t& bytes);
// The word size a side allows, from layout_args' `bits`.
inline int layout_word(const LayoutArgs& a, uint64_t bits) { return a.strided ? static_cast<int>(bits) : word_for(bits); }

}  // namespace dtmpi::pack::detail
