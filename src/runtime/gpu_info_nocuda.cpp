// GPU discovery in a build without CUDA: there is nothing to find.
#include "runtime/system_info.hpp"

namespace dtmpi::runtime {

GpuInfo query_gpus() {
  GpuInfo info;
  info.note = "dtmpi was built without CUDA";
  return info;
}

}  // namespace dtmpi::runtime
