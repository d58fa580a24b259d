// Synchronous pack and unpack where a buffer is GPU memory (MPI_Pack and
// MPI_Unpack, the one-message methods, the collectives): the work
// pack/gpu_dispatch.hpp chooses, on dtmpi's streams, with pooled buffers in
// between where the GPU cannot reach a buffer, then the wait. The header is
// CUDA-free; without CUDA these are never reached with GPU memory.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/result.hpp"
#include "pack/pieces.hpp"
#include "runtime/pointer_kind.hpp"
#include "runtime/streams.hpp"
#include "type/plan.hpp"

namespace dtmpi::runtime {

// Synchronous pack/unpack of `count` elements where at least one buffer is on
// the GPU: kernels straight into/out of device or mapped pinned memory, staged
// through pooled buffers otherwise. kTransfer where the call must come after
// transfer work queued before it.
Status gpu_pack(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                void* packed, const PointerInfo& pi, Lane lane = Lane::kSync);
Status gpu_unpack(const type::PackPlan& plan, int64_t count, const void* packed,
                  const PointerInfo& pi, void* user, const PointerInfo& ui, Lane lane = Lane::kSync);

// Synchronous move of `bytes` packed bytes from (src_plan, src_count) at `src`
// to (dst_plan, dst_count) at `dst`, both GPU memory the kernels of `device`
// reach (device, managed, IPC-mapped): one kernel from layout to layout, no
// packed copy (pack::copy_layout_device).
Status gpu_copy_layout(const type::PackPlan& src_plan, int64_t src_count, const void* src,
                       const type::PackPlan& dst_plan, int64_t dst_count, void* dst, int64_t bytes, int device);

// DTMPI_PACK_ASYNC: a pack or unpack between device memory `a` and device
// memory `b` of one GPU may return once queued -- on the legacy default
// stream, so the application's later work on it or on any blocking stream,
// and every dtmpi stream but the batch lane (blocking streams under
// DTMPI_GPU_ORDER=legacy, which it requires), run after it.
bool may_queue_pack(const PointerInfo& a, const PointerInfo& b);
Status gpu_pack_queued(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                       void* packed);
Status gpu_unpack_queued(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                         const PointerInfo& ui);

// --- Many pieces at once (the collectives) ---------------------------------

// Packs every piece (all user buffers in memory like `ui`) into `packed`
// (memory `pi`, `total` bytes), with one GPU kernel launch for many pieces and
// one wait; host pieces are packed by the CPU.
Status pack_pieces(const pack::PieceRef* pieces, size_t n, const PointerInfo& ui, void* packed,
                   const PointerInfo& pi, int64_t total);
Status unpack_pieces(const pack::PieceRef* pieces, size_t n, const void* packed, const PointerInfo& pi,
                     const PointerInfo& ui, int64_t total);

// Single-message receives completed together (one MPI_Waitall): `count`
// elements of `plan` from the mapped pinned staging buffer `packed` into GPU
// memory `user` (ui). unpack_received unpacks them all with one batched
// kernel launch per device (per 32 strided pieces) and one wait, instead of a
// launch and a wait each.
struct ReceivedPiece {
  const type::PackPlan* plan = nullptr;
  int64_t count = 0;
  const void* packed = nullptr;
  void* user = nullptr;
  PointerInfo ui;
};
Status unpack_received(const ReceivedPiece* pieces, size_t n);

}  // namespace dtmpi::runtime
