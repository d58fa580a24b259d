// The method choice for GPU point-to-point messages: DTMPI_METHOD, else the
// performance model (transport/predict.hpp), within what the peer allows.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "pack/gpu_dispatch.hpp"
#include "runtime/config.hpp"
#include "transport/peers.hpp"
#include "transport/predict.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::transport {

namespace rt = dtmpi::runtime;

const char* method_name(Method m) {
  switch (m) {
    case Method::kOneShot: return "oneshot";
    case Method::kStaged: return "staged";
    case Method::kPipelined: return "pipelined";
    case Method::kDevice: return "device";
  }
  return "?";
}

int64_t typical_block(const type::PackPlan& plan) {
  if (plan.is_strided()) return std::max<int64_t>(plan.strided().block, 1);
  const auto& ir = plan.irregular();
  int64_t blocks = 0;
  for (const auto& p : ir.pieces) blocks += p.strided < 0 ? 1 : ir.strided[static_cast<size_t>(p.strided)].blocks();
  return std::max<int64_t>(ir.body_bytes / std::max<int64_t>(blocks, 1), 1);
}

int64_t typical_pitch(const type::PackPlan& plan) {
  if (!plan.is_strided() || plan.strided().ndims == 0) return 0;
  return std::abs(plan.strided().dims[0].stride);
}

Method choose_method(const UserBuffer& b, int peer_world) {
  const int64_t bytes = b.bytes;
  const std::string& m = rt::config().method;
  // multi-message methods need a known peer, are only used from kMultiMin
  // bytes (what receivers rely on to recognize descriptors), and only in a
  // job whose receivers look for descriptors (not with a CUDA-aware system
  // MPI, nor in a job without GPUs: host data staged there travels as one message)
  const bool multi = bytes >= kMultiMin && peer_world >= 0 && peers_ready() && descriptors_possible();
  if (m == "oneshot") return Method::kOneShot;
  if (m == "staged") return Method::kStaged;
  if ((m == "pipelined" || m == "device") && !multi) return bytes <= kOneShotLimit ? Method::kOneShot : Method::kStaged;
  if (m == "pipelined") return Method::kPipelined;
  if (m == "device") return Method::kDevice;
  // A peer that is another process on this rank's GPU (learned from its
  // answer to a device-method transfer): without MPS the device method's
  // kernels or device-to-device copies wait for a compute-engine context turn
  // on each side (~150 us on an H100), while the one-message path moves a
  // copy-engine layout between the GPU and pinned host memory without one
  // (2D 64 KiB: 33-41 us against ~160; bench/results/gpu-pingpong-small-1xh100-2026-11-23-s9.txt).
  if (multi && rt::on_gpu(b.info) && bytes <= kSharedGpuOneMessageMax && shares_gpu_with(peer_world) &&
      pack::copy_engine_layout(*b.plan, b.count))
    return bytes <= kOneShotLimit ? Method::kOneShot : Method::kStaged;
  Shape s;
  s.bytes = bytes;
  s.block = typical_block(*b.plan);
  s.pitch = typical_pitch(*b.plan);
  s.multi = multi;
  s.ipc = multi && rt::on_gpu(b.info) && ipc_possible(peer_world);
  return choose_by_model(s);
}

}  // namespace dtmpi::transport
