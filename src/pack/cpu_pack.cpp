#include "pack/cpu_pack.hpp"

#include <cstdint>
#include <cstring>

namespace dtmpi::pack {
namespace {

using type::IrregularPlan;
using type::PackPlan;
using type::Piece;
using type::StridedPlan;

// Typemap offsets may be negative and the base may be MPI_BOTTOM (null), so
// user addresses are formed in integer arithmetic.
inline char* at(const void* base, int64_t off) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(off));
}

// Direction of a copy: kPack reads the user buffer and writes the packed one.
template <bool kPack>
inline void move(char* packed, char* user, size_t n) {
  if constexpr (kPack)
    std::memcpy(packed, user, n);
  else
    std::memcpy(user, packed, n);
}

// Copies n (1..64) bytes with at most two fixed-size moves that may overlap
// inside the block: much cheaper than a memcpy call for small odd sizes, and
// safe for unpack because every byte written belongs to the block.
template <bool kPack>
inline void move_small(char* packed, char* user, int64_t n) {
  const size_t k = static_cast<size_t>(n);
  if (k >= 32) {
    move<kPack>(packed, user, 32);
    move<kPack>(packed + k - 32, user + k - 32, 32);
  } else if (k >= 16) {
    move<kPack>(packed, user, 16);
    move<kPack>(packed + k - 16, user + k - 16, 16);
  } else if (k >= 8) {
    move<kPack>(packed, user, 8);
    move<kPack>(packed + k - 8, user + k - 8, 8);
  } else if (k >= 4) {
    move<kPack>(packed, user, 4);
    move<kPack>(packed + k - 4, user + k - 4, 4);
  } else {
    for (size_t i = 0; i < k; ++i) move<kPack>(packed + i, user + i, 1);
  }
}

// One row of n blocks of B bytes, `stride` apart in user memory, contiguous in
// the packed buffer. B is a compile-time constant for the common small sizes
// (the copy becomes register moves) and the loop is unrolled 4x so tiny
// blocks are not dominated by loop overhead.
// Blocks far apart each cost a cache miss; the hardware prefetcher does not
// follow strides across pages, so prefetch a fixed number of rows ahead.
constexpr int64_t kPrefetchRows = 16;

template <bool kPack>
inline void prefetch_row(const char* user) {
  __builtin_prefetch(user, kPack ? 0 : 1, 0);
}

template <bool kPack, int64_t B>
void copy_row(char* packed, char* user, int64_t n, int64_t stride) {
  int64_t i = 0;
  const bool far = stride >= 128 || stride <= -128;
  for (; i + 4 <= n; i += 4, packed += 4 * B, user += 4 * stride) {
    if (far && i + kPrefetchRows + 4 <= n) {
      prefetch_row<kPack>(user + kPrefetchRows * stride);
      prefetch_row<kPack>(user + (kPrefetchRows + 1) * stride);
      prefetch_row<kPack>(user + (kPrefetchRows + 2) * stride);
      prefetch_row<kPack>(user + (kPrefetchRows + 3) * stride);
    }
    move<kPack>(packed, user, B);
    move<kPack>(packed + B, user + stride, B);
    move<kPack>(packed + 2 * B, user + 2 * stride, B);
    move<kPack>(packed + 3 * B, user + 3 * stride, B);
  }
  for (; i < n; ++i, packed += B, user += stride) move<kPack>(packed, user, B);
}

template <bool kPack>
void copy_row_small(char* packed, char* user, int64_t n, int64_t stride, int64_t b) {
  for (int64_t i = 0; i < n; ++i, packed += b, user += stride) move_small<kPack>(packed, user, b);
}

template <bool kPack>
void copy_row_large(char* packed, char* user, int64_t n, int64_t stride, int64_t b) {
  for (int64_t i = 0; i < n; ++i, packed += b, user += stride)
    move<kPack>(packed, user, static_cast<size_t>(b));
}

template <bool kPack>
using RowFn = void (*)(char*, char*, int64_t, int64_t);

template <bool kPack>
RowFn<kPack> fixed_row(int64_t b) {
  switch (b) {
    case 1: return copy_row<kPack, 1>;
    case 2: return copy_row<kPack, 2>;
    case 4: return copy_row<kPack, 4>;
    case 8: return copy_row<kPack, 8>;
    case 12: return copy_row<kPack, 12>;
    case 16: return copy_row<kPack, 16>;
    case 24: return copy_row<kPack, 24>;
    case 32: return copy_row<kPack, 32>;
    case 48: return copy_row<kPack, 48>;
    case 64: return copy_row<kPack, 64>;
    default: return nullptr;
  }
}

// Odometer over dims[first..ndims): steps idx and the user offset to the next
// position; false once every position was visited.
inline bool next_index(const StridedPlan& p, int first, int64_t* idx, int64_t& off) {
  for (int d = first; d < p.ndims; ++d) {
    off += p.dims[d].stride;
    if (++idx[d] < p.dims[d].count) return true;
    off -= p.dims[d].stride * p.dims[d].count;
    idx[d] = 0;
  }
  return false;
}

template <bool kPack>
char* strided(const StridedPlan& p, const void* user_base, char* packed) {
  const int64_t b = p.block;
  if (b == 0) return packed;
  char* user = at(user_base, p.offset);
  if (p.ndims == 0) {
    move<kPack>(packed, user, static_cast<size_t>(b));
    return packed + b;
  }
  const int64_t n0 = p.dims[0].count, s0 = p.dims[0].stride;
  const RowFn<kPack> fixed = fixed_row<kPack>(b);
  if (p.ndims == 1) {  // the common 2D case: one row, no odometer
    if (fixed)
      fixed(packed, user, n0, s0);
    else if (b <= 64)
      copy_row_small<kPack>(packed, user, n0, s0, b);
    else
      copy_row_large<kPack>(packed, user, n0, s0, b);
    return packed + n0 * b;
  }
  int64_t idx[type::kMaxDims] = {};
  int64_t off = 0;  // user offset of the current row
  const int64_t row_bytes = n0 * b;
  for (;;) {
    if (fixed)
      fixed(packed, user + off, n0, s0);
    else if (b <= 64)
      copy_row_small<kPack>(packed, user + off, n0, s0, b);
    else
      copy_row_large<kPack>(packed, user + off, n0, s0, b);
    packed += row_bytes;
    if (!next_index(p, 1, idx, off)) return packed;
  }
}

template <bool kPack>
char* irregular(const IrregularPlan& ip, const void* user_base, char* packed) {
  const StridedPlan& o = ip.outer;
  int64_t idx[type::kMaxDims] = {};
  int64_t off = o.offset;
  const Piece* const begin = ip.pieces.data();
  const Piece* const end = begin + ip.pieces.size();
  for (;;) {
    char* base = at(user_base, off);
    if (!ip.word_blocks.empty()) {
      // a compact block list of 8-byte words: one short word loop per block
      // beats the size dispatch of move_small when lengths vary
      for (const int64_t e : ip.word_blocks) {
        char* u = base + (e >> 16);
        const int64_t n = e & 0xffff;
        for (int64_t k = 0; k < n; ++k) move<kPack>(packed + 8 * k, u + 8 * k, 8);
        packed += 8 * n;
      }
    } else {
      for (const Piece* p = begin; p != end; ++p) {
        if (p->strided < 0) {  // block-list entry: the common irregular case
          char* u = base + p->offset;
          if (p->block <= 64)
            move_small<kPack>(packed, u, p->block);
          else
            move<kPack>(packed, u, static_cast<size_t>(p->block));
          packed += p->block;
        } else {
          packed = strided<kPack>(ip.strided[static_cast<size_t>(p->strided)], base, packed);
        }
      }
    }
    if (!next_index(o, 0, idx, off)) return packed;
  }
}

template <bool kPack>
void run(const PackPlan& plan, int64_t count, const void* user, char* packed) {
  if (plan.is_strided()) {
    if (count == 1) {
      strided<kPack>(plan.strided(), user, packed);
      return;
    }
    StridedPlan whole;  // (dims left uninitialised: only the used ones are written)
    if (plan.strided_for_count(count, whole)) {  // count folded into the plan
      strided<kPack>(whole, user, packed);
      return;
    }
    for (int64_t k = 0; k < count; ++k)
      packed = strided<kPack>(plan.strided(), at(user, k * plan.extent), packed);
    return;
  }
  for (int64_t k = 0; k < count; ++k)
    packed = irregular<kPack>(plan.irregular(), at(user, k * plan.extent), packed);
}

// Calls f(user offset, block bytes) for every block of one element of `p`
// (relative to `base`) in pack order while f returns true.
template <class F>
bool each_block(const StridedPlan& p, int64_t base, F& f) {
  if (p.block == 0) return true;
  int64_t idx[type::kMaxDims] = {};
  int64_t off = 0;
  do {
    if (!f(base + p.offset + off, p.block)) return false;
  } while (next_index(p, 0, idx, off));
  return true;
}

template <class F>
void each_block(const PackPlan& plan, F& f) {
  if (plan.is_strided()) {
    each_block(plan.strided(), 0, f);
    return;
  }
  const IrregularPlan& ip = plan.irregular();
  int64_t idx[type::kMaxDims] = {};
  int64_t off = ip.outer.offset;
  do {
    for (const Piece& p : ip.pieces) {
      const bool more = p.strided < 0 ? f(off + p.offset, p.block)
                                      : each_block(ip.strided[static_cast<size_t>(p.strided)], off, f);
      if (!more) return;
    }
  } while (next_index(ip.outer, 0, idx, off));
}

}  // namespace

void unpack_host_prefix(const PackPlan& plan, const void* packed, void* user, int64_t bytes) {
  const char* in = static_cast<const char*>(packed);
  auto copy = [&](int64_t off, int64_t block) {
    const int64_t n = block < bytes ? block : bytes;
    std::memcpy(at(user, off), in, static_cast<size_t>(n));
    in += n;
    bytes -= n;
    return bytes > 0;
  };
  if (bytes > 0) each_block(plan, copy);
}

void element_offsets(const PackPlan& plan, int64_t count, int64_t element, std::vector<int64_t>& out) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t base = k * plan.extent;
    auto add = [&](int64_t off, int64_t block) {
      for (int64_t b = 0; b + element <= block; b += element) out.push_back(base + off + b);
      return true;
    };
    each_block(plan, add);
  }
}

void pack_host(const PackPlan& plan, int64_t count, const void* user, void* packed) {
  run<true>(plan, count, user, static_cast<char*>(packed));
}

void unpack_host(const PackPlan& plan, int64_t count, const void* packed, void* user) {
  run<false>(plan, count, user, static_cast<char*>(const_cast<void*>(packed)));
}

}  // namespace dtmpi::pack
