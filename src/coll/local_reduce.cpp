// coll/local_reduce.hpp. The kernels follow C's arithmetic on the element
// type, as the MPI standard defines the predefined ops (MPI-4.1, 6.9.2).
#include "coll/local_reduce.hpp"

#include <cstring>
#include <type_traits>

namespace dtmpi::coll {

namespace {

enum class Kind { kSum, kProd, kMax, kMin, kBand, kBor, kBxor };

template <class T, Kind K>
void kernel(const void* in, void* inout, int64_t count) {
  const char* a = static_cast<const char*>(in);
  char* b = static_cast<char*>(inout);
  for (int64_t i = 0; i < count; ++i) {
    T x, y;  // memcpy: a user's buffer need not be aligned for T
    std::memcpy(&x, a + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    std::memcpy(&y, b + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    // inout first, as Open MPI and MPICH write them (inout = inout op in):
    // the same NaN payload and signed zero where the operands tie
    T r;
    if constexpr (std::is_integral_v<T> && (K == Kind::kSum || K == Kind::kProd)) {
      // in the unsigned type: wraps as the MPIs' C code does on two's
      // complement, without C++'s undefined signed overflow
      using U = std::make_unsigned_t<T>;
      const U a = static_cast<U>(y), b = static_cast<U>(x);
      r = static_cast<T>(K == Kind::kSum ? static_cast<U>(a + b) : static_cast<U>(a * b));
    } else if constexpr (K == Kind::kSum) r = static_cast<T>(y + x);
    else if constexpr (K == Kind::kProd) r = static_cast<T>(y * x);
    else if constexpr (K == Kind::kMax) r = y > x ? y : x;
    else if constexpr (K == Kind::kMin) r = y < x ? y : x;
    else if constexpr (K == Kind::kBand) r = static_cast<T>(y & x);
    else if constexpr (K == Kind::kBor) r = static_cast<T>(y | x);
    else r = static_cast<T>(y ^ x);
    std::memcpy(b + i * static_cast<int64_t>(sizeof(T)), &r, sizeof(T));
  }
}

template <class T>
LocalReduceFn for_type(MPI_Op op) {
  if (op == MPI_SUM) return kernel<T, Kind::kSum>;
  if (op == MPI_PROD) return kernel<T, Kind::kProd>;
  if (op == MPI_MAX) return kernel<T, Kind::kMax>;
  if (op == MPI_MIN) return kernel<T, Kind::kMin>;
  if constexpr (std::is_integral_v<T>) {
    if (op == MPI_BAND) return kernel<T, Kind::kBand>;
    if (op == MPI_BOR) return kernel<T, Kind::kBor>;
    if (op == MPI_BXOR) return kernel<T, Kind::kBxor>;
  }
  return nullptr;
}

}  // namespace

LocalReduceFn local_reduce_for(MPI_Op op, MPI_Datatype t) {
  if (t == MPI_DOUBLE) return for_type<double>(op);
  if (t == MPI_FLOAT) return for_type<float>(op);
  if (t == MPI_INT || t == MPI_INT32_T) return for_type<int32_t>(op);
  if (t == MPI_UNSIGNED || t == MPI_UINT32_T) return for_type<uint32_t>(op);
  if (t == MPI_LONG_LONG || t == MPI_INT64_T) return for_type<int64_t>(op);
  if (t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T) return for_type<uint64_t>(op);
  if (t == MPI_LONG) return for_type<long>(op);
  if (t == MPI_UNSIGNED_LONG) return for_type<unsigned long>(op);
  return nullptr;
}

}  // namespace dtmpi::coll
