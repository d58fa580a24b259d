// Pointer classification in a build without CUDA: all memory is host memory.
#include "runtime/pointer_kind.hpp"

namespace dtmpi::runtime {

PointerInfo pointer_info(const void*) { return PointerInfo{}; }
PointerInfo pointer_info_exact(const void*) { return PointerInfo{}; }
uint64_t driver_pointer_queries() { return 0; }

}  // namespace dtmpi::runtime
