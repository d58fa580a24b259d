// dtmpi-scope built without CUDA: every GPU row is one skipped entry.
#include "scope.hpp"

namespace dtmpi::scope {

void detect_machine() {
  Machine& m = mutable_machine();
  m.gpus = 0;
  m.no_gpu = "built without CUDA (DTMPI_CUDA=OFF or no nvcc)";
  if (mutable_options().peer == -2) mutable_options().peer = -1;
}

void register_gpu_rows() { add({.name = "gpu/all-rows", .skip = machine().no_gpu}); }

}  // namespace dtmpi::scope
