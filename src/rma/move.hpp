// Moving (count, plan) between user memory of any kind and host bytes: the
// CPU packers for host memory, dtmpi's GPU packers for device and managed
// memory. Shared by the origin (packing what it sends, unpacking replies)
// and the target (applying requests to its window memory).
#pragma once
#include <cstdint>

#include "base/result.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/plan.hpp"

namespace dtmpi::rma {

Status pack_any(const type::PackPlan& plan, int64_t count, const void* user, const runtime::PointerInfo& ui,
                void* host_out);
Status unpack_any(const type::PackPlan& plan, int64_t count, const void* host_in, void* user,
                  const runtime::PointerInfo& ui);

}  // namespace dtmpi::rma
