// Messages that end inside an element. MPI allows a message shorter than the
// receive, also one that ends inside an element: the received prefix of the
// typemap is filled, and MPI_Get_elements counts its basic elements. These
// unpack the first `bytes` of a packed stream: the whole elements as stage_in
// / runtime::gpu_unpack do, then the prefix of the next one (CPU:
// pack::unpack_host_prefix; GPU memory: that byte range of the element's
// packed stream, by the GPU packer). Built with and without CUDA.
#pragma once
#include <cstdint>

#include "base/result.hpp"
#include "runtime/buffers.hpp"
#include "runtime/pointer_kind.hpp"
#include "runtime/streams.hpp"
#include "type/plan.hpp"

namespace dtmpi::transport {

Status stage_in_bytes(const type::PackPlan& plan, int64_t bytes, const runtime::Staging& staging, void* user,
                      const runtime::PointerInfo& ui, bool via_device);
// `packed` in memory `pi`; `lane`: where work on it was queued before (waited for first).
Status gpu_unpack_bytes(const type::PackPlan& plan, int64_t bytes, const void* packed,
                        const runtime::PointerInfo& pi, void* user, const runtime::PointerInfo& ui,
                        runtime::Lane lane = runtime::Lane::kSync);

}  // namespace dtmpi::transport
