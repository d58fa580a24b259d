// GPU pack dispatch: which work moves `count` elements of a plan between GPU
// memory and another buffer -- one copy-engine copy, copy-engine rows, a
// kernel, or one batched kernel for many pieces -- queued on a stream the
// caller passes. Queues only: streams, buffers in between and waits are
// runtime's (runtime/device_pack.hpp, runtime/stream_pack.hpp). The header is
// CUDA-free; the functions are built with CUDA only, except copy_engine_layout
// (false without CUDA: gpu_dispatch_nocuda.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/result.hpp"
#include "pack/gpu_pack.hpp"
#include "pack/memory_kind.hpp"
#include "pack/pieces.hpp"
#include "type/plan.hpp"

namespace dtmpi::pack {

// Whether `count` elements of `plan` move between device and pinned host
// memory by one copy-engine copy (one block, or rows of at least 16 bytes at a
// constant pitch) instead of a kernel.
bool copy_engine_layout(const type::PackPlan& plan, int64_t count);

// Queues on `stream` (of ui.device) the pack of `count` elements from GPU
// memory `user` (ui) into `packed` (pi) where nothing is needed in between:
// one copy-engine copy into device or managed memory (a contiguous layout,
// also peer to peer), copy-engine rows from device into pinned memory, or a
// kernel writing device, managed or mapped pinned memory. False, nothing
// queued: `packed` is host memory the GPU cannot write (pack into a device
// buffer, then copy).
Result<bool> queue_pack_direct(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                               void* packed, const PointerInfo& pi, GpuStream stream);
// The same for the unpack from `packed` (pi) into GPU memory `user` (ui).
Result<bool> queue_unpack_direct(const type::PackPlan& plan, int64_t count, const void* packed,
                                 const PointerInfo& pi, void* user, const PointerInfo& ui, GpuStream stream);

// Between device memory `user` and `packed` of one `device`: one
// device-to-device copy for a contiguous layout, else the kernel
// (`to_packed`: a pack, else an unpack).
Status queue_device_to_device(bool to_packed, const type::PackPlan& plan, int64_t count, void* user, void* packed,
                              int device, GpuStream stream);

// Bytes `range` of the packed stream that starts at device memory `dst`,
// packed from GPU memory `user`: a copy for a contiguous layout, else the kernel.
Status queue_pack_range(const type::PackPlan& plan, int64_t count, const void* user, void* dst, int device,
                        GpuStream stream, type::PackedRange range = {});
// Bytes `range` of the packed stream that starts at device-accessible
// `packed`, unpacked into GPU memory `user`; with a gate always the kernel.
Status queue_unpack_range(const type::PackPlan& plan, int64_t count, const void* packed, void* user, int device,
                          GpuStream stream, Gate gate = {}, type::PackedRange range = {});

// Every piece with a count, packed at `packed` + its offset
// (device-accessible memory), by the batched kernel (pack_pieces_device).
Status queue_pack_pieces(const PieceRef* pieces, size_t n, char* packed, int device, GpuStream stream);
Status queue_unpack_pieces(const PieceRef* pieces, size_t n, const char* packed, int device, GpuStream stream);

}  // namespace dtmpi::pack
