// Staging: moving a buffer in any memory through a host staging buffer
// (runtime/buffers.hpp) that the system MPI sends or receives -- the
// one-message methods and the collectives' staged side. Built with and
// without CUDA.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/result.hpp"
#include "pack/pieces.hpp"
#include "runtime/buffers.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/plan.hpp"

namespace dtmpi::transport {

// Packs `count` elements from `user` (any memory) into host `staging`.
// `via_device`: pack on the GPU into device memory first, then one DMA copy
// (the staged method); else the kernel writes the mapped host buffer (one-shot).
Status stage_out(const type::PackPlan& plan, int64_t count, const void* user, const runtime::PointerInfo& ui,
                 const runtime::Staging& staging, bool via_device);
// Unpacks `count` elements from host `staging` into `user` (any memory).
Status stage_in(const type::PackPlan& plan, int64_t count, const runtime::Staging& staging, void* user,
                const runtime::PointerInfo& ui, bool via_device);

// The same for many pieces (all user buffers in memory like `ui`, `total`
// packed bytes), with one GPU kernel launch for many pieces and one wait
// (runtime::pack_pieces).
Status stage_out_pieces(const pack::PieceRef* pieces, size_t n, const runtime::PointerInfo& ui,
                        const runtime::Staging& staging, int64_t total, bool via_device);
Status stage_in_pieces(const pack::PieceRef* pieces, size_t n, const runtime::Staging& staging,
                       const runtime::PointerInfo& ui, int64_t total, bool via_device);

}  // namespace dtmpi::transport
