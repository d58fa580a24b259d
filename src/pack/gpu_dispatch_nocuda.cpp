// pack/gpu_dispatch.hpp in a build without CUDA: no layout goes to a copy
// engine (nothing else of it is reached: no pointer is GPU memory).
#include "pack/gpu_dispatch.hpp"

namespace dtmpi::pack {

bool copy_engine_layout(const type::PackPlan&, int64_t) { return false; }

}  // namespace dtmpi::pack
