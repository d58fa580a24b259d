// Without CUDA there is no device window memory: never reached.
#include "rma/atomic.hpp"

namespace dtmpi::rma {

Status atomic_apply(int, char*, const int64_t*, int64_t, const void*, const void*, void*, int64_t, AtomicType,
                    AtomicOp) {
  return Error{MPI_ERR_INTERN, "device atomics without CUDA"};
}

Result<bool> atomic_apply_layouts(int, const LayoutSide&, const LayoutSide*, const LayoutSide*, int64_t, AtomicType,
                                  AtomicOp) {
  return false;
}

}  // namespace dtmpi::rma
