// CPU packers for both plan kinds: `count` elements of a plan (elements
// plan.extent apart) between the user's buffer (typemap offsets relative to
// `user`) and a contiguous packed buffer of count * plan.size bytes.
#pragma once
#include <cstdint>

#include "type/plan.hpp"

namespace dtmpi::pack {

void pack_host(const type::PackPlan& plan, int64_t count, const void* user, void* packed);
void unpack_host(const type::PackPlan& plan, int64_t count, const void* packed, void* user);

}  // namespace dtmpi::pack
