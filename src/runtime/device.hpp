// The device context: whether dtmpi uses a GPU at all, which device the
// calling thread uses, and the GPU resources given back at MPI_Finalize. The
// header is CUDA-free; in a build without CUDA (or at run time without a
// driver or device, or with DTMPI_CUDA=off) gpu_enabled() is false and every
// pointer is host memory (runtime/pointer_kind.hpp). The CUDA side, for CUDA
// source files: runtime/cuda_device.hpp.
#pragma once
#include <string>

namespace dtmpi::runtime {

bool gpu_enabled();

// The device the calling thread uses (0 without CUDA).
int current_device();

// Whether this process holds `device`'s primary context (the CUDA runtime
// made it: cudaSetDevice, an allocation, a launch). True also where the
// driver cannot tell. Tests check with it that a brief measurement
// (runtime/peer_bandwidth.hpp) left no context on a GPU it did not use.
bool primary_context_active(int device);

// Pool counters (allocations from CUDA, reuses, bytes held) as one line.
std::string gpu_pool_stats();
// Returns pooled buffers and streams to CUDA (at MPI_Finalize), after what
// higher layers registered with at_gpu_release.
void release_gpu_resources();
// What a higher layer keeps on the GPU and gives back at release_gpu_resources,
// before the pools and streams, the last registered first (transport's
// batched packs, which commit ready values, before the ready counters they
// need: a pack is batched only with a value of a counter that exists).
void at_gpu_release(void (*release)());

}  // namespace dtmpi::runtime
