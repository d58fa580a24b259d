// Device atomics for accumulates (rma/atomic.hpp): one thread per element, a
// compare-and-swap loop on the element's bits (every op and type alike,
// 4- or 8-byte words), the old value kept for fetching forms.
#include <cuda_runtime.h>

#include <cstring>

#include "base/cuda_check.hpp"
#include "pack/gpu_layout.cuh"
#include "rma/atomic.hpp"
#include "runtime/buffers.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/streams.hpp"

namespace dtmpi::rma {
namespace {

template <class T>
__device__ T combine(AtomicOp op, T a, T b, T cmp) {
  switch (op) {
    case AtomicOp::kSum: return a + b;
    case AtomicOp::kProd: return a * b;
    case AtomicOp::kMax: return a > b ? a : b;
    case AtomicOp::kMin: return a < b ? a : b;
    case AtomicOp::kLand: return static_cast<T>((a != T(0)) && (b != T(0)));
    case AtomicOp::kLor: return static_cast<T>((a != T(0)) || (b != T(0)));
    case AtomicOp::kLxor: return static_cast<T>((a != T(0)) != (b != T(0)));
    case AtomicOp::kReplace: return b;
    case AtomicOp::kCas: return a == cmp ? b : a;
    default: return a;  // kNoOp
  }
}

template <class T>
__device__ T combine_bits(AtomicOp op, T a, T b, T cmp) {  // integers: the bitwise ops too
  switch (op) {
    case AtomicOp::kBand: return a & b;
    case AtomicOp::kBor: return a | b;
    case AtomicOp::kBxor: return a ^ b;
    default: return combine(op, a, b, cmp);
  }
}

// One element, atomically: old = *w; *w = old op v (kCas: v where old == c).
template <class T, class Word>
__device__ T apply_one(Word* w, T v, T c, AtomicOp op, bool integer) {
  static_assert(sizeof(T) == sizeof(Word));
  Word cur = *reinterpret_cast<volatile Word*>(w);
  for (;;) {
    T t;
    memcpy(&t, &cur, sizeof t);
    T next;
    if constexpr (std::is_integral_v<T>) next = integer ? combine_bits(op, t, v, c) : combine(op, t, v, c);
    else next = combine(op, t, v, c);
    Word want;
    memcpy(&want, &next, sizeof want);
    const Word seen = atomicCAS(w, cur, want);
    if (seen == cur) break;
    cur = seen;
  }
  T old;
  memcpy(&old, &cur, sizeof old);
  return old;
}

template <class T, class Word>
__global__ void apply_kernel(char* base, const int64_t* offsets, int64_t first, const T* values, const T* compare,
                             T* old, int64_t n, AtomicOp op, bool integer) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    Word* w = reinterpret_cast<Word*>(base + (offsets ? offsets[i] : first + i * int64_t{sizeof(T)}));
    const T prev = apply_one<T, Word>(w, values ? values[i] : T(0), compare ? compare[i] : T(0), op, integer);
    if (old) old[i] = prev;
  }
}

// Every side at its own layout in memory this GPU's kernels reach: element i
// of the target, of the origin's operands (null: kNoOp) and of the result
// (null: no fetch) found as the pack kernels find packed word i.
template <class T, class Word>
__global__ void apply_layout_kernel(pack::detail::LayoutArgs ta, char* target, pack::detail::LayoutArgs oa,
                                    const char* origin, pack::detail::LayoutArgs ra, char* result, int64_t n,
                                    AtomicOp op, bool integer) {
  using pack::detail::offset_of;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t g = static_cast<uint64_t>(i);
    const T v = origin ? *reinterpret_cast<const T*>(origin + offset_of<T>(oa, g)) : T(0);
    const T prev = apply_one<T, Word>(reinterpret_cast<Word*>(target + offset_of<T>(ta, g)), v, T(0), op, integer);
    if (result) *reinterpret_cast<T*>(result + offset_of<T>(ra, g)) = prev;
  }
}

template <class T, class Word>
void launch(cudaStream_t s, char* base, const int64_t* offs, int64_t first, const void* vals, const void* cmp,
            void* old, int64_t n, AtomicOp op) {
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  apply_kernel<T, Word><<<blocks, threads, 0, s>>>(base, offs, first, static_cast<const T*>(vals),
                                                   static_cast<const T*>(cmp), static_cast<T*>(old), n, op,
                                                   std::is_integral_v<T>);
}

// The copies in, the kernel, the copy out, on dtmpi's sync stream of `device`.
Status run(int device, char* base, const int64_t* offsets, int64_t first, const void* values, const void* compare,
           void* old, int64_t n, AtomicType t, AtomicOp op, char* d, size_t word) {
  const size_t nb = static_cast<size_t>(n);
  int64_t* d_offs = reinterpret_cast<int64_t*>(d);
  char* d_vals = d + nb * 8;
  char* d_cmp = d_vals + nb * word;
  char* d_old = d_cmp + nb * word;
  if (offsets) DTMPI_TRY(runtime::copy_bytes(d_offs, offsets, nb * 8, device));
  const int64_t* offs = offsets ? d_offs : nullptr;
  if (values) DTMPI_TRY(runtime::copy_bytes(d_vals, values, nb * word, device));
  if (compare) DTMPI_TRY(runtime::copy_bytes(d_cmp, compare, nb * word, device));
  {
    runtime::DeviceScope scope(device);
    auto s = runtime::stream_for(device, runtime::Lane::kSync);
    if (!s) return s.error();
    const void* v = values ? d_vals : nullptr;
    const void* c = compare ? d_cmp : nullptr;
    void* o = old ? d_old : nullptr;
    switch (t) {
      case AtomicType::kI32: launch<int32_t, unsigned int>(s.value(), base, offs, first, v, c, o, n, op); break;
      case AtomicType::kU32: launch<uint32_t, unsigned int>(s.value(), base, offs, first, v, c, o, n, op); break;
      case AtomicType::kF32: launch<float, unsigned int>(s.value(), base, offs, first, v, c, o, n, op); break;
      case AtomicType::kI64: launch<long long, unsigned long long>(s.value(), base, offs, first, v, c, o, n, op); break;
      case AtomicType::kU64: launch<unsigned long long, unsigned long long>(s.value(), base, offs, first, v, c, o, n, op); break;
      case AtomicType::kF64: launch<double, unsigned long long>(s.value(), base, offs, first, v, c, o, n, op); break;
      default: return Error{MPI_ERR_INTERN, "atomic accumulate of an uncovered type"};
    }
    DTMPI_CUDA_CHECK(cudaGetLastError());
  }
  DTMPI_TRY(runtime::wait_stream(device, runtime::Lane::kSync));
  if (old) DTMPI_TRY(runtime::copy_bytes(old, d_old, nb * word, device));
  return ok_status();
}

template <class T, class Word>
void launch_layouts(cudaStream_t s, const pack::detail::LayoutArgs (&a)[3], char* const (&base)[3], int64_t n,
                    AtomicOp op) {
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  apply_layout_kernel<T, Word><<<blocks, threads, 0, s>>>(a[0], base[0], a[1], base[1], a[2], base[2], n, op,
                                                          std::is_integral_v<T>);
}

}  // namespace

Result<bool> atomic_apply_layouts(int device, const LayoutSide& target, const LayoutSide* origin,
                                  const LayoutSide* result, int64_t n, AtomicType t, AtomicOp op) {
  if (n == 0) return true;
  const int64_t el = (t == AtomicType::kI32 || t == AtomicType::kU32 || t == AtomicType::kF32) ? 4 : 8;
  runtime::DeviceScope scope(device);
  auto s = runtime::stream_for(device, runtime::Lane::kSync);
  if (!s) return s.error();
  pack::detail::LayoutArgs args[3] = {};
  char* base[3] = {nullptr, nullptr, nullptr};
  const LayoutSide* sides[3] = {&target, origin, result};
  for (int k = 0; k < 3; ++k) {
    if (!sides[k]) continue;
    const LayoutSide& side = *sides[k];
    uint64_t bits = 0;
    int64_t bytes = 0;
    auto a = pack::detail::layout_args(*side.plan, side.count, static_cast<const char*>(side.base), device, s.value(),
                                       bits, bytes);
    if (!a) return a.error();
    // whole, aligned elements at every place, and enough of them; else the
    // caller's element-offset path
    if (pack::detail::layout_word(a.value(), bits) < el || bytes < n * el) return false;
    args[k] = a.value();
    if (args[k].strided) args[k].words_per_block /= static_cast<uint64_t>(el);
    base[k] = static_cast<char*>(side.base);
  }
  switch (t) {
    case AtomicType::kI32: launch_layouts<int32_t, unsigned int>(s.value(), args, base, n, op); break;
    case AtomicType::kU32: launch_layouts<uint32_t, unsigned int>(s.value(), args, base, n, op); break;
    case AtomicType::kF32: launch_layouts<float, unsigned int>(s.value(), args, base, n, op); break;
    case AtomicType::kI64: launch_layouts<long long, unsigned long long>(s.value(), args, base, n, op); break;
    case AtomicType::kU64: launch_layouts<unsigned long long, unsigned long long>(s.value(), args, base, n, op); break;
    case AtomicType::kF64: launch_layouts<double, unsigned long long>(s.value(), args, base, n, op); break;
    default: return Error{MPI_ERR_INTERN, "atomic accumulate of an uncovered type"};
  }
  DTMPI_CUDA_CHECK(cudaGetLastError());
  DTMPI_TRY(runtime::wait_stream(device, runtime::Lane::kSync));
  return true;
}

Status atomic_apply(int device, char* base, const int64_t* offsets, int64_t first, const void* values,
                    const void* compare, void* old, int64_t n, AtomicType t, AtomicOp op) {
  if (n == 0) return ok_status();
  const size_t word = (t == AtomicType::kI32 || t == AtomicType::kU32 || t == AtomicType::kF32) ? 4 : 8;
  const size_t nb = static_cast<size_t>(n);
  // one device buffer: offsets, values, compare values, old values
  auto buf = runtime::acquire_device_buffer(device, nb * 8 + 3 * nb * word);
  if (!buf) return buf.error();
  Status st =
      run(device, base, offsets, first, values, compare, old, n, t, op, static_cast<char*>(buf.value().ptr), word);
  runtime::release_device_buffer(buf.value());
  return st;
}

}  // namespace dtmpi::rma
