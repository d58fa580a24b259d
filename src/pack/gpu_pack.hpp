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

Status pack_device(const type::PackPlan& plan, int64_t count, const void* user, void* packed,
                   int device, GpuStream stream);
Status unpack_device(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                     int device, GpuStream stream);

// Word size (bytes per thread access) the strided kernel would use for these
// addresses: the largest of 16, 8, 4, 2, 1 dividing both bases, the block and
// every stride (exposed for tests and dtmpi-info --explain).
int strided_word_size(const type::StridedPlan& p, const void* user, const void* packed);

// Packs with the irregular (block-list search) kernel even where the plan is
// strided: the benchmark compares the two kernels on one layout.
Status pack_device_as_block_list(const type::PackPlan& plan, int64_t count, const void* user,
                                 void* packed, int device, GpuStream stream);

}  // namespace dtmpi::pack
