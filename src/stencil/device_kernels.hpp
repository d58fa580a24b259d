// The stencil exchange's CUDA kernels (device_kernels.cu), behind plain
// structs so that the C++20 side (device.cpp) and nvcc share this header.
// One launch moves one region (one direction) of every quantity of a
// subdomain (up to kMaxQuantities): into or out of a packed buffer (quantity after quantity, each x
// fastest), or straight into another subdomain's ghosts on the same GPU.
#pragma once
#include <cstdint>

namespace dtmpi::stencil::device {

constexpr int kMaxQuantities = 16;  // per launch; more quantities take more launches

struct RegionArgs {
  int quantities = 0;
  // per quantity: its region's points per axis (quantities may reach less
  // far than the domain's radius), and the first thread index that is its
  int64_t nx[kMaxQuantities] = {}, ny[kMaxQuantities] = {}, nz[kMaxQuantities] = {};
  int64_t first[kMaxQuantities + 1] = {};
  // per quantity: the region's first point in the subdomain (src side for a
  // copy), its row pitch and slice in bytes, its element size, and the word
  // (1, 2, 4 or 8 bytes) every address it touches is a multiple of
  char* mem[kMaxQuantities] = {};
  int64_t pitch[kMaxQuantities] = {}, slice[kMaxQuantities] = {}, esize[kMaxQuantities] = {};
  int word[kMaxQuantities] = {};
  // pack / unpack: each quantity's first byte in the packed buffer; copy: the
  // destination's first point, pitch and slice
  char* other[kMaxQuantities] = {};
  int64_t other_pitch[kMaxQuantities] = {}, other_slice[kMaxQuantities] = {};
};

enum class Move { kPack, kUnpack, kCopy };

// Queues the move on `stream` (a cudaStream_t); returns the launch's cudaError_t as int.
int launch(Move move, const RegionArgs& args, void* stream);

}  // namespace dtmpi::stencil::device
