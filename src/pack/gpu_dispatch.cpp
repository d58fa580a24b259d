// pack/gpu_dispatch.hpp in CUDA builds.
#include "pack/gpu_dispatch.hpp"

#include <cuda_runtime.h>

#include <vector>

#include "base/cuda_check.hpp"
#include "base/trace.hpp"

namespace dtmpi::pack {
namespace {

// Whether `count` elements of `plan` are one block or rows of one block size
// at a constant positive pitch that the copy engine moves between device and
// pinned host memory as one 2D copy (`rows`: that layout). Such a copy costs
// what a pack kernel does on a GPU of its own (16-B rows: 6.6 vs 6.5 us for
// 64 KiB, 256-B rows: 4.9 vs 6.4), but when another process shares the GPU a
// kernel waits for a compute-engine context turn (~150 us on an H100) and the
// copy engine's turn costs ~10-14 us (bench/results/probe-shared-gpu-1xh100-2026-11-23.txt).
// Only the region measured: rows of at least 16 bytes, at most 8192 of them.
bool copy_engine_rows(const type::PackPlan& plan, int64_t count, type::StridedPlan& rows) {
  if (!plan.is_strided() || !plan.strided_for_count(count, rows) || rows.block <= 0) return false;
  if (rows.ndims == 0) return true;
  return rows.ndims == 1 && rows.block >= 16 && rows.dims[0].count <= 8192 && rows.dims[0].stride >= rows.block;
}

// Queues the copy of such `rows` between the user's device memory `user` and
// packed pinned memory `packed` (`to_packed`: a pack, else an unpack).
Status copy_rows(const type::StridedPlan& rows, void* user, void* packed, bool to_packed, cudaStream_t s) {
  const auto width = static_cast<size_t>(rows.block);
  const auto height = static_cast<size_t>(rows.ndims ? rows.dims[0].count : 1);
  const auto pitch = static_cast<size_t>(rows.ndims ? rows.dims[0].stride : rows.block);
  char* u = static_cast<char*>(user) + rows.offset;
  if (to_packed)
    DTMPI_CUDA_CHECK(cudaMemcpy2DAsync(packed, width, u, pitch, width, height, cudaMemcpyDeviceToHost, s));
  else
    DTMPI_CUDA_CHECK(cudaMemcpy2DAsync(u, pitch, packed, width, width, height, cudaMemcpyHostToDevice, s));
  return ok_status();
}

// The pieces with a count, as the batched kernel takes them.
std::vector<DevicePiece> device_pieces(const PieceRef* pieces, size_t n, char* packed) {
  std::vector<DevicePiece> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (pieces[i].count > 0) out.push_back({pieces[i].plan, pieces[i].count, pieces[i].user, packed + pieces[i].offset});
  return out;
}

}  // namespace

bool copy_engine_layout(const type::PackPlan& plan, int64_t count) {
  type::StridedPlan rows;
  return copy_engine_rows(plan, count, rows);
}

Result<bool> queue_pack_direct(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                               void* packed, const PointerInfo& pi, GpuStream stream) {
  const int64_t bytes = count * plan.size;
  void* direct = on_gpu(pi) ? packed : pi.device_ptr;  // device, managed, or mapped pinned
  int64_t offset = 0;
  if (on_gpu(pi) && plan.contiguous_for_count(count, offset)) {  // one copy-engine copy (also peer to peer)
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, static_cast<const char*>(user) + offset,
                                     static_cast<size_t>(bytes), cudaMemcpyDefault, stream));
    return true;
  }
  type::StridedPlan rows;
  if (ui.kind == MemKind::kDevice && pi.kind == MemKind::kPinnedHost && copy_engine_rows(plan, count, rows)) {
    DTMPI_TRY(copy_rows(rows, const_cast<void*>(user), packed, true, stream));
    return true;
  }
  if (direct) {
    DTMPI_TRACE("gpu: pack launching (synchronous)");
    DTMPI_TRY(pack_device(plan, count, user, direct, ui.device, stream));
    return true;
  }
  return false;
}

Result<bool> queue_unpack_direct(const type::PackPlan& plan, int64_t count, const void* packed,
                                 const PointerInfo& pi, void* user, const PointerInfo& ui, GpuStream stream) {
  const int64_t bytes = count * plan.size;
  const void* direct = on_gpu(pi) ? packed : pi.device_ptr;
  int64_t offset = 0;
  if (on_gpu(pi) && plan.contiguous_for_count(count, offset)) {
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(user) + offset, packed, static_cast<size_t>(bytes),
                                     cudaMemcpyDefault, stream));
    return true;
  }
  type::StridedPlan rows;
  if (ui.kind == MemKind::kDevice && pi.kind == MemKind::kPinnedHost && copy_engine_rows(plan, count, rows)) {
    DTMPI_TRY(copy_rows(rows, user, const_cast<void*>(packed), false, stream));
    return true;
  }
  if (direct) {
    DTMPI_TRY(unpack_device(plan, count, direct, user, ui.device, stream));
    return true;
  }
  return false;
}

Status queue_device_to_device(bool to_packed, const type::PackPlan& plan, int64_t count, void* user, void* packed,
                              int device, GpuStream stream) {
  int64_t offset = 0;
  if (plan.contiguous_for_count(count, offset)) {
    char* u = static_cast<char*>(user) + offset;
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(to_packed ? packed : u, to_packed ? u : packed,
                                     static_cast<size_t>(count * plan.size), cudaMemcpyDeviceToDevice, stream));
    return ok_status();
  }
  return to_packed ? pack_device(plan, count, user, packed, device, stream)
                   : unpack_device(plan, count, packed, user, device, stream);
}

Status queue_pack_range(const type::PackPlan& plan, int64_t count, const void* user, void* dst, int device,
                        GpuStream stream, type::PackedRange range) {
  int64_t offset = 0;
  if (plan.contiguous_for_count(count, offset)) {
    const int64_t bytes = range.end_in(count * plan.size) - range.first;
    if (bytes > 0)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + range.first,
                                       static_cast<const char*>(user) + offset + range.first,
                                       static_cast<size_t>(bytes), cudaMemcpyDefault, stream));
    return ok_status();
  }
  return pack_device(plan, count, user, dst, device, stream, range);
}

Status queue_unpack_range(const type::PackPlan& plan, int64_t count, const void* packed, void* user, int device,
                          GpuStream stream, Gate gate, type::PackedRange range) {
  int64_t offset = 0;
  if (gate.word) {
    DTMPI_TRY(unpack_device(plan, count, packed, user, device, stream, gate, range));
  } else if (plan.contiguous_for_count(count, offset)) {
    const int64_t bytes = range.end_in(count * plan.size) - range.first;
    if (bytes > 0)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(user) + offset + range.first,
                                       static_cast<const char*>(packed) + range.first, static_cast<size_t>(bytes),
                                       cudaMemcpyDefault, stream));
  } else {
    DTMPI_TRY(unpack_device(plan, count, packed, user, device, stream, {}, range));
  }
  return ok_status();
}

Status queue_pack_pieces(const PieceRef* pieces, size_t n, char* packed, int device, GpuStream stream) {
  auto dp = device_pieces(pieces, n, packed);
  return pack_pieces_device(dp.data(), dp.size(), device, stream);
}

Status queue_unpack_pieces(const PieceRef* pieces, size_t n, const char* packed, int device, GpuStream stream) {
  auto dp = device_pieces(pieces, n, const_cast<char*>(packed));
  return unpack_pieces_device(dp.data(), dp.size(), device, stream);
}

}  // namespace dtmpi::pack
