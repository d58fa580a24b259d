// The host half of rma/atomic.hpp: which MPI types and ops the kernels cover.
#include "base/system_mpi.hpp"
#include "pack/cpu_pack.hpp"
#include "rma/atomic.hpp"

namespace dtmpi::rma {

AtomicType atomic_type(MPI_Datatype e) {
  int size = 0;
  if (e == MPI_DATATYPE_NULL || REAL(MPI_Type_size)(e, &size) != MPI_SUCCESS) return AtomicType::kNone;
  const bool is_float = e == MPI_FLOAT || e == MPI_DOUBLE || e == MPI_REAL || e == MPI_DOUBLE_PRECISION;
  const bool is_signed = e == MPI_INT || e == MPI_LONG || e == MPI_LONG_LONG || e == MPI_INT32_T ||
                         e == MPI_INT64_T || e == MPI_AINT || e == MPI_OFFSET || e == MPI_COUNT || e == MPI_INTEGER;
  const bool is_unsigned = e == MPI_UNSIGNED || e == MPI_UNSIGNED_LONG || e == MPI_UNSIGNED_LONG_LONG ||
                           e == MPI_UINT32_T || e == MPI_UINT64_T;
  if (is_float) return size == 4 ? AtomicType::kF32 : size == 8 ? AtomicType::kF64 : AtomicType::kNone;
  if (is_signed) return size == 4 ? AtomicType::kI32 : size == 8 ? AtomicType::kI64 : AtomicType::kNone;
  if (is_unsigned) return size == 4 ? AtomicType::kU32 : size == 8 ? AtomicType::kU64 : AtomicType::kNone;
  return AtomicType::kNone;
}

AtomicOp atomic_op(MPI_Op op, AtomicType t) {
  const bool integer = t == AtomicType::kI32 || t == AtomicType::kU32 || t == AtomicType::kI64 || t == AtomicType::kU64;
  if (t == AtomicType::kNone) return AtomicOp::kNone;
  if (op == MPI_SUM) return AtomicOp::kSum;
  if (op == MPI_PROD) return AtomicOp::kProd;
  if (op == MPI_MAX) return AtomicOp::kMax;
  if (op == MPI_MIN) return AtomicOp::kMin;
  if (op == MPI_LAND) return AtomicOp::kLand;
  if (op == MPI_LOR) return AtomicOp::kLor;
  if (op == MPI_LXOR) return AtomicOp::kLxor;
  if (op == MPI_REPLACE) return AtomicOp::kReplace;
  if (op == MPI_NO_OP) return AtomicOp::kNoOp;
  if (integer && op == MPI_BAND) return AtomicOp::kBand;
  if (integer && op == MPI_BOR) return AtomicOp::kBor;
  if (integer && op == MPI_BXOR) return AtomicOp::kBxor;
  return AtomicOp::kNone;  // bitwise ops on floating types are an error the host path reports
}

bool atomic_offsets(const type::PackPlan& plan, int64_t count, int64_t element, std::vector<int64_t>& offsets,
                    int64_t& first) {
  const int64_t bytes = plan.size * count;
  if (bytes % element != 0) return false;
  first = 0;
  if (plan.contiguous_for_count(count, first)) return true;
  pack::element_offsets(plan, count, element, offsets);
  return static_cast<int64_t>(offsets.size()) * element == bytes;
}

}  // namespace dtmpi::rma
