// CPU packers for both plan kinds. The plan passed in already covers the whole
// operation (PackPlan::for_count), so one call moves plan-bytes bytes between
// the user's buffer (typemap offsets relative to `user`) and a contiguous
// packed buffer.
#pragma once
#include "type/plan.hpp"

namespace dtmpi::pack {

void pack_host(const type::PackPlan& plan, const void* user, void* packed);
void unpack_host(const type::PackPlan& plan, const void* packed, void* user);

// The strided kernel alone (also used for each piece of an irregular plan).
void pack_strided(const type::StridedPlan& p, const void* user, void* packed);
void unpack_strided(const type::StridedPlan& p, const void* packed, void* user);

}  // namespace dtmpi::pack
