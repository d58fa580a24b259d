// Pointer classification in a build without CUDA: all memory is host memory.
#include "runtime/pointer_kind.hpp"

namespace dtmpi::runtime {

namespace pointer_kind_detail {
std::atomic<int> g_classify{0};  // no CUDA: every pointer is host memory
PointerInfo pointer_info_slow(const void*) { return PointerInfo{}; }
}  // namespace pointer_kind_detail
PointerInfo pointer_info_exact(const void*) { return PointerInfo{}; }
uint64_t driver_pointer_queries() { return 0; }

}  // namespace dtmpi::runtime
