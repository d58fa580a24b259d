// Accumulates applied on the GPU by atomic operations, element by element,
// where the window memory is device memory: by an origin of the same node
// straight into the target's mapped window (rma/direct.hpp), and by the
// target itself for the requests it receives -- both atomic on the device, so
// concurrent accumulates from both kinds of origin stay atomic per element.
// Covered: 4- and 8-byte integers and floating types with MPI_SUM, PROD,
// MAX, MIN, LAND, LOR, LXOR, MPI_REPLACE, MPI_NO_OP, and BAND, BOR, BXOR on
// integers; compare-and-swap. Everything else (MINLOC/MAXLOC pairs, 1- and
// 2-byte types, long double, complex) is applied by the target on the host,
// one request at a time. The header is CUDA-free (atomic_nocuda.cpp).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "base/result.hpp"
#include "type/plan.hpp"

namespace dtmpi::rma {

enum class AtomicType : int32_t { kNone = 0, kI32, kU32, kI64, kU64, kF32, kF64 };
enum class AtomicOp : int32_t { kNone = 0, kSum, kProd, kMax, kMin, kLand, kLor, kLxor, kBand, kBor, kBxor,
                                kReplace, kNoOp, kCas };

// The device kernel's codes for (element, op); kNone when not covered.
AtomicType atomic_type(MPI_Datatype element);
AtomicOp atomic_op(MPI_Op op, AtomicType t);
inline bool atomic_supported(MPI_Datatype element, MPI_Op op) {
  const AtomicType t = atomic_type(element);
  return t != AtomicType::kNone && atomic_op(op, t) != AtomicOp::kNone;
}

// For i < n, at byte offset o_i = offsets[i] (or, with `offsets` null, the
// contiguous run o_i = first + i * element size): old[i] = base[o_i];
// base[o_i] = old op values[i] (kCas: values[i] where old equals compare[i]),
// each atomically. `offsets`, `values`, `compare` and `old` are host arrays
// (copied to and from the GPU here); any but `values` may be null. Waits.
Status atomic_apply(int device, char* base, const int64_t* offsets, int64_t first, const void* values,
                    const void* compare, void* old, int64_t n, AtomicType t, AtomicOp op);
// One side of atomic_apply_layouts: `count` elements of `plan` at `base`.
struct LayoutSide {
  const type::PackPlan* plan;
  int64_t count;
  void* base;
};
// atomic_apply with every side in its own layout in GPU memory that kernels
// on `device` reach (its device memory, IPC-mapped windows, managed memory):
// element i of `target`, its operand element i of `origin` (null: kNoOp),
// its old value into element i of `result` (null: no fetch) -- one kernel,
// no offset lists and no host copies. False (nothing done) where a layout is
// not whole elements aligned to their size: then atomic_apply. Waits.
Result<bool> atomic_apply_layouts(int device, const LayoutSide& target, const LayoutSide* origin,
                                  const LayoutSide* result, int64_t n, AtomicType t, AtomicOp op);
// The byte offsets of `count` elements of `plan` in units of `element` bytes,
// or none (`first` set) when they are one contiguous run. False when the plan
// is not whole units.
bool atomic_offsets(const type::PackPlan& plan, int64_t count, int64_t element, std::vector<int64_t>& offsets,
                    int64_t& first);

}  // namespace dtmpi::rma
