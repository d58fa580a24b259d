// A PackPlan as bytes, for a process that never saw the MPI datatype it was
// built from: one-sided operations (src/rma) describe the target's layout
// with the origin's datatype, so the origin sends the plan and the target
// packs and unpacks its window memory with it. Datatype handles are local to
// a process (Open MPI's are addresses), plans are plain values.
#pragma once
#include <cstdint>
#include <vector>

#include "base/result.hpp"
#include "type/plan.hpp"

namespace dtmpi::type {

// Appends the wire form of `plan` (layout, size, lb, extent, first byte; no
// attachments) to `out`.
void encode_plan(const PackPlan& plan, std::vector<unsigned char>& out);
// Reads one plan from [*pos, end) and advances *pos past it. Fails with
// MPI_ERR_INTERN on a malformed or truncated form (a peer running another
// dtmpi version), never reads past `end`.
Result<PackPlan> decode_plan(const unsigned char* data, size_t end, size_t* pos);

}  // namespace dtmpi::type
