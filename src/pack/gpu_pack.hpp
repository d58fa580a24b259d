// CUDA packers for both plan kinds (built when CUDA is enabled). Both buffers
// must be accessible from the device: device or managed memory, or mapped
// pinned host memory (then the kernel reads or writes host memory directly:
// the zero-copy "one-shot" path). Calls are asynchronous on `stream`.
#pragma once
#include <cstdint>

#include "base/result.hpp"
#include "type/plan.hpp"

struct CUstream_st;

namespace dtmpi::pack {

using GpuStream = CUstream_st*;  // a cudaStream_t

// `range`: only those bytes of the packed stream (`packed` is still where the
// whole stream starts), so a large message can be packed and read in chunks.
Status pack_device(const type::PackPlan& plan, int64_t count, const void* user, void* packed,
                   int device, GpuStream stream, type::PackedRange range = {});
// A wait for a producer's ready counter done by the unpack kernel itself:
// the first thread of every thread block polls `word` (a system-scope acquire
// load) until it holds at least `value` (the cyclic comparison of a stream
// wait), then the block proceeds. A stream wait that is not yet satisfied
// when the GPU reaches it is re-checked only every several microseconds; a
// polling kernel sees the write about a microsecond after it lands. A gated
// launch takes at most two thread blocks per SM, so the producer's kernels
// find room beside it. Only for producers on another GPU or in this process
// (a kernel spinning for work of another process sharing its GPU would hold
// the GPU for a whole time slice).
struct Gate {
  const void* word = nullptr;  // null: no gate
  uint64_t value = 0;
};
Status unpack_device(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                     int device, GpuStream stream, Gate gate = {}, type::PackedRange range = {});

// One piece of a batched pack: `count` elements of `plan` at `user` (where
// MPI's element 0 starts), packed at `packed`.
struct DevicePiece {
  const type::PackPlan* plan = nullptr;
  int64_t count = 0;
  void* user = nullptr;
  void* packed = nullptr;
};
// Pieces one batched launch takes (its parameter block stays under 4 KiB).
inline constexpr int kPiecesPerLaunch = 32;
// Packs (unpacks) every piece with one kernel launch per up to kPiecesPerLaunch pieces of
// strided layout (at most 3 dims for their count); others take a launch
// each. `launches` (optional) tells how many launches were made.
Status pack_pieces_device(const DevicePiece* pieces, size_t n, int device, GpuStream stream,
                          int* launches = nullptr);
Status unpack_pieces_device(const DevicePiece* pieces, size_t n, int device, GpuStream stream,
                            int* launches = nullptr);

// Moves the first `bytes` of the packed stream of (src_plan, src_count) at
// `src` into their places in (dst_plan, dst_count) at `dst` with one kernel on
// `device` and no packed copy in between (both device-accessible: device,
// managed or IPC-mapped memory). Either plan kind on either side.
Status copy_layout_device(const type::PackPlan& src_plan, int64_t src_count, const void* src,
                          const type::PackPlan& dst_plan, int64_t dst_count, void* dst, int64_t bytes, int device,
                          GpuStream stream);

// Word size (bytes per thread access) the strided kernel would use for these
// addresses: the largest of 16, 8, 4, 2, 1 dividing both bases, the block and
// every stride (exposed for tests and dtmpi-info --explain).
int strided_word_size(const type::StridedPlan& p, const void* user, const void* packed);

// Packs with the irregular (block-list search) kernel even where the plan is
// strided: the benchmark compares the two kernels on one layout.
Status pack_device_as_block_list(const type::PackPlan& plan, int64_t count, const void* user,
                                 void* packed, int device, GpuStream stream);

}  // namespace dtmpi::pack
