// The heat example's update on a GPU (heat_kernels.cu), behind plain
// arguments so that the C++20 program and nvcc share this header.
#pragma once
#include <cstdint>

namespace heat {

struct UpdateArgs {
  const char* in = nullptr;  // first byte of the allocation (its lowest ghost point)
  char* out = nullptr;
  int64_t pitch = 0, slice = 0;  // bytes
  int64_t lo[3] = {}, hi[3] = {};  // the points to update, relative to the allocation's first point
  int radius = 1;
  double coef[4] = {};  // the second difference's weights, centre first
  double alpha = 0;
  // --flops F: F more dependent multiply-adds per point, each v * 1 + 0 (one
  // and zero runtime values, so not folded away; exact, the answer is
  // unchanged): an interior of higher arithmetic intensity than a Laplacian
  int flops = 0;
  double one = 1, zero = 0;
};

// out = in + alpha * (sum over axes of the second difference of in), on `stream`;
// returns the launch's cudaError_t as int.
int launch_update(const UpdateArgs& a, void* stream);
int synchronize(void* stream);
int synchronize_device();  // cudaDeviceSynchronize
// The updates' stream (non-blocking, made once on the current device): an
// application overlapping its interior update with the exchange computes on
// its own stream, as Astaroth does; on the legacy default stream the halo
// messages' GPU work would wait for the update (dtmpi orders its GPU work
// after that stream, as the data a send reads may come from it). Null if it
// could not be made.
void* compute_stream();
// The GPUs this process sees (0 without a usable one); selects GPU
// local_rank % count, so the ranks of a node spread over its GPUs.
int select_device(int local_rank);
// cudaMemcpy(dst, src, bytes, cudaMemcpyDefault): the example's uploads and checks
int copy(void* dst, const void* src, int64_t bytes);

}  // namespace heat
