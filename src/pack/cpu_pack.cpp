#include "pack/cpu_pack.hpp"

#include <cstdint>
#include <cstring>

namespace dtmpi::pack {
namespace {

using type::IrregularPlan;
using type::PackPlan;
using type::StridedPlan;

// Typemap offsets may be negative and the base may be MPI_BOTTOM (null), so
// user addresses are formed in integer arithmetic.
inline char* at(const void* base, int64_t off) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(off));
}

// One row of n blocks of B bytes, `stride` apart in user memory, contiguous in
// the packed buffer. B is a compile-time constant for the common small sizes so
// the copy becomes a few register moves instead of a memcpy call.
template <bool kPack, int64_t B>
void copy_row(char* packed, char* user, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i, packed += B, user += stride) {
    if constexpr (kPack)
      std::memcpy(packed, user, B);
    else
      std::memcpy(user, packed, B);
  }
}

template <bool kPack>
void copy_row_any(char* packed, char* user, int64_t n, int64_t stride, int64_t b) {
  for (int64_t i = 0; i < n; ++i, packed += b, user += stride) {
    if constexpr (kPack)
      std::memcpy(packed, user, static_cast<size_t>(b));
    else
      std::memcpy(user, packed, static_cast<size_t>(b));
  }
}

template <bool kPack>
using RowFn = void (*)(char*, char*, int64_t, int64_t);

template <bool kPack>
RowFn<kPack> row_for(int64_t b) {
  switch (b) {
    case 1: return copy_row<kPack, 1>;
    case 2: return copy_row<kPack, 2>;
    case 3: return copy_row<kPack, 3>;
    case 4: return copy_row<kPack, 4>;
    case 6: return copy_row<kPack, 6>;
    case 8: return copy_row<kPack, 8>;
    case 12: return copy_row<kPack, 12>;
    case 16: return copy_row<kPack, 16>;
    case 24: return copy_row<kPack, 24>;
    case 32: return copy_row<kPack, 32>;
    case 48: return copy_row<kPack, 48>;
    case 64: return copy_row<kPack, 64>;
    case 128: return copy_row<kPack, 128>;
    default: return nullptr;
  }
}

template <bool kPack>
char* strided(const StridedPlan& p, const void* user_base, char* packed) {
  const int64_t b = p.block;
  if (b == 0) return packed;
  char* user = at(user_base, p.offset);
  if (p.ndims == 0) {
    if constexpr (kPack)
      std::memcpy(packed, user, static_cast<size_t>(b));
    else
      std::memcpy(user, packed, static_cast<size_t>(b));
    return packed + b;
  }
  const int64_t n0 = p.dims[0].count, s0 = p.dims[0].stride;
  const RowFn<kPack> row = row_for<kPack>(b);
  int64_t idx[type::kMaxDims] = {};
  int64_t off = 0;  // user offset of the current row
  const int64_t row_bytes = n0 * b;
  for (;;) {
    if (row)
      row(packed, user + off, n0, s0);
    else
      copy_row_any<kPack>(packed, user + off, n0, s0, b);
    packed += row_bytes;
    int d = 1;  // odometer over the outer dims
    for (; d < p.ndims; ++d) {
      off += p.dims[d].stride;
      if (++idx[d] < p.dims[d].count) break;
      off -= p.dims[d].stride * p.dims[d].count;
      idx[d] = 0;
    }
    if (d == p.ndims) return packed;
  }
}

template <bool kPack>
char* irregular(const IrregularPlan& ip, const void* user_base, char* packed) {
  const StridedPlan& o = ip.outer;
  int64_t idx[type::kMaxDims] = {};
  int64_t off = o.offset;
  for (;;) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(user_base) + static_cast<uintptr_t>(off);
    for (const auto& piece : ip.pieces) {
      if (piece.ndims == 0) {  // block-list entry: the common irregular case
        char* u = at(reinterpret_cast<void*>(base), piece.offset);
        if constexpr (kPack)
          std::memcpy(packed, u, static_cast<size_t>(piece.block));
        else
          std::memcpy(u, packed, static_cast<size_t>(piece.block));
        packed += piece.block;
      } else {
        packed = strided<kPack>(piece, reinterpret_cast<void*>(base), packed);
      }
    }
    int d = 0;
    for (; d < o.ndims; ++d) {
      off += o.dims[d].stride;
      if (++idx[d] < o.dims[d].count) break;
      off -= o.dims[d].stride * o.dims[d].count;
      idx[d] = 0;
    }
    if (d == o.ndims) return packed;
  }
}

template <bool kPack>
void run(const PackPlan& plan, const void* user, char* packed) {
  if (plan.is_strided())
    strided<kPack>(plan.strided(), user, packed);
  else
    irregular<kPack>(plan.irregular(), user, packed);
}

}  // namespace

void pack_host(const PackPlan& plan, const void* user, void* packed) {
  run<true>(plan, user, static_cast<char*>(packed));
}

void unpack_host(const PackPlan& plan, const void* packed, void* user) {
  run<false>(plan, user, static_cast<char*>(const_cast<void*>(packed)));
}

void pack_strided(const StridedPlan& p, const void* user, void* packed) {
  strided<true>(p, user, static_cast<char*>(packed));
}

void unpack_strided(const StridedPlan& p, const void* packed, void* user) {
  strided<false>(p, user, static_cast<char*>(const_cast<void*>(packed)));
}

}  // namespace dtmpi::pack
