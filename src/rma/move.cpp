#include "rma/move.hpp"

#include "pack/cpu_pack.hpp"
#include "runtime/device_pack.hpp"

namespace dtmpi::rma {

Status pack_any(const type::PackPlan& plan, int64_t count, const void* user, const runtime::PointerInfo& ui,
                void* host_out) {
  if (count == 0 || plan.size == 0) return ok_status();
  if (runtime::on_gpu(ui)) return runtime::gpu_pack(plan, count, user, ui, host_out, runtime::PointerInfo{});
  pack::pack_host(plan, count, user, host_out);
  return ok_status();
}

Status unpack_any(const type::PackPlan& plan, int64_t count, const void* host_in, void* user,
                  const runtime::PointerInfo& ui) {
  if (count == 0 || plan.size == 0) return ok_status();
  if (runtime::on_gpu(ui)) return runtime::gpu_unpack(plan, count, host_in, runtime::PointerInfo{}, user, ui);
  pack::unpack_host(plan, count, host_in, user);
  return ok_status();
}

}  // namespace dtmpi::rma
