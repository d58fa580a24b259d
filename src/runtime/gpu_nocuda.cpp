// GPU runtime in a build without CUDA: no pointer is GPU memory, so the GPU
// entry points are never reached; they report so if called.
#include "runtime/gpu.hpp"

namespace dtmpi::runtime {

bool gpu_enabled() { return false; }
PointerInfo pointer_info(const void*) { return PointerInfo{}; }


Status gpu_pack(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, const PointerInfo&) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status gpu_unpack(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, const PointerInfo&) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
std::string gpu_pool_stats() { return "built without CUDA"; }
void release_gpu_resources() {}

}  // namespace dtmpi::runtime
