// CPU packers for both plan kinds: `count` elements of a plan (elements
// plan.extent apart) between the user's buffer (typemap offsets relative to
// `user`) and a contiguous packed buffer of count * plan.size bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "type/plan.hpp"

namespace dtmpi::pack {

void pack_host(const type::PackPlan& plan, int64_t count, const void* user, void* packed);
void unpack_host(const type::PackPlan& plan, int64_t count, const void* packed, void* user);
// Unpacks only the first `bytes` (less than plan.size) of one element's packed
// stream into the element at `user`: what a message that ends inside an
// element brings (MPI fills the received prefix of the typemap).
void unpack_host_prefix(const type::PackPlan& plan, const void* packed, void* user, int64_t bytes);
// Appends the user-buffer offset of every `element`-byte unit of `count`
// elements of `plan`, in pack order (blocks are whole units: a type built of
// one predefined type). For kernels that address elements one by one (the
// one-sided accumulates' device atomics, src/rma/atomic.hpp).
void element_offsets(const type::PackPlan& plan, int64_t count, int64_t element, std::vector<int64_t>& out);

}  // namespace dtmpi::pack
