// Markers: pooled CUDA events that tell when the work queued on dtmpi's
// stream before them is done, and the copies queued with one. The header is
// CUDA-free (what a marker is, for code that records one:
// runtime/cuda_markers.hpp).
#pragma once
#include <cstddef>

#include "base/result.hpp"

namespace dtmpi::runtime {

using GpuMarker = void*;
// A copy queued on dtmpi's stream of `device` (any direction, UVA pointers),
// and a marker after it.
Result<GpuMarker> copy_async(void* dst, const void* src, size_t bytes, int device);
// A marker after the work queued so far on dtmpi's stream of `device`.
Result<GpuMarker> mark(int device);
// True once the work before `m` is done; an error (a fault) is returned as such.
Result<bool> marker_done(GpuMarker m);
// Waits (spinning) until the work before `m` is done.
Status wait_marker(GpuMarker m);
void release_marker(GpuMarker m);

}  // namespace dtmpi::runtime
