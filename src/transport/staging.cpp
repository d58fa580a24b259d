// Staging (transport/staging.hpp): host data by the CPU packers, GPU data by
// runtime's synchronous GPU packs into or out of the staging buffer.
#include "transport/staging.hpp"

#include "pack/cpu_pack.hpp"
#include "runtime/device_pack.hpp"

namespace dtmpi::transport {
namespace {

// How the GPU packers see a staging buffer: pinned memory is mapped at the same
// address (UVA); `via_device` hides the mapping so the staged method is used.
runtime::PointerInfo staging_info(const runtime::Staging& staging, bool via_device) {
  runtime::PointerInfo si;
  si.kind = staging.pinned ? runtime::MemKind::kPinnedHost : runtime::MemKind::kHost;
  si.device_ptr = staging.pinned && !via_device ? staging.ptr : nullptr;
  return si;
}

}  // namespace

Status stage_out(const type::PackPlan& plan, int64_t count, const void* user, const runtime::PointerInfo& ui,
                 const runtime::Staging& staging, bool via_device) {
  if (!runtime::on_gpu(ui)) {
    pack::pack_host(plan, count, user, staging.ptr);
    return ok_status();
  }
  return runtime::gpu_pack(plan, count, user, ui, staging.ptr, staging_info(staging, via_device));
}

Status stage_in(const type::PackPlan& plan, int64_t count, const runtime::Staging& staging, void* user,
                const runtime::PointerInfo& ui, bool via_device) {
  if (!runtime::on_gpu(ui)) {
    pack::unpack_host(plan, count, staging.ptr, user);
    return ok_status();
  }
  return runtime::gpu_unpack(plan, count, staging.ptr, staging_info(staging, via_device), user, ui);
}

Status stage_out_pieces(const pack::PieceRef* pieces, size_t n, const runtime::PointerInfo& ui,
                        const runtime::Staging& staging, int64_t total, bool via_device) {
  return runtime::pack_pieces(pieces, n, ui, staging.ptr, staging_info(staging, via_device), total);
}

Status stage_in_pieces(const pack::PieceRef* pieces, size_t n, const runtime::Staging& staging,
                       const runtime::PointerInfo& ui, int64_t total, bool via_device) {
  return runtime::unpack_pieces(pieces, n, staging.ptr, staging_info(staging, via_device), ui, total);
}

}  // namespace dtmpi::transport
