// Packing and unpacking many pieces of a collective at once
// (runtime/device_pack.hpp), CUDA builds: one batched kernel launch for the
// pieces of a side (pack/gpu_dispatch.hpp) and one wait, instead of a launch
// and a wait per piece.
#include <cuda_runtime.h>

#include <vector>

#include "base/cuda_check.hpp"
#include "pack/gpu_dispatch.hpp"
#include "pack/gpu_pack.hpp"
#include "pack/pieces.hpp"
#include "runtime/buffer_pool.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/device_pack.hpp"

namespace dtmpi::runtime {

using pack::PieceRef;

Status pack_pieces(const PieceRef* pieces, size_t n, const PointerInfo& ui, void* packed, const PointerInfo& pi,
                   int64_t total) {
  if (total <= 0) return ok_status();
  const auto bytes = static_cast<size_t>(total);
  if (!on_gpu(ui)) {
    if (!on_gpu(pi)) {
      pack::pack_pieces_host(pieces, n, static_cast<char*>(packed));
      return ok_status();
    }
    DeviceScope scope(pi.device);  // host data into device memory: CPU pack into pinned, one copy
    auto s = stream_for(pi.device, Lane::kSync);
    if (!s) return s.error();
    auto tmp = pinned_pool().acquire(bytes);
    if (!tmp) return tmp.error();
    PoolLease lease(pinned_pool(), tmp.value());
    pack::pack_pieces_host(pieces, n, static_cast<char*>(lease.get()));
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, lease.get(), bytes, cudaMemcpyHostToDevice, s.value()));
    return finish(pi.device, s.value());
  }
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, Lane::kSync);
  if (!s) return s.error();
  void* direct = on_gpu(pi) ? packed : pi.device_ptr;  // device, managed or mapped pinned
  if (direct) {
    DTMPI_TRY(pack::queue_pack_pieces(pieces, n, static_cast<char*>(direct), ui.device, s.value()));
    return finish(ui.device, s.value());
  }
  auto tmp = device_pool(ui.device).acquire(bytes);  // pageable host: pack on the device, one copy
  if (!tmp) return tmp.error();
  PoolLease lease(device_pool(ui.device), tmp.value());
  DTMPI_TRY(pack::queue_pack_pieces(pieces, n, static_cast<char*>(lease.get()), ui.device, s.value()));
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(packed, lease.get(), bytes, cudaMemcpyDeviceToHost, s.value()));
  return finish(ui.device, s.value());
}

Status unpack_pieces(const PieceRef* pieces, size_t n, const void* packed, const PointerInfo& pi,
                     const PointerInfo& ui, int64_t total) {
  if (total <= 0) return ok_status();
  const auto bytes = static_cast<size_t>(total);
  if (!on_gpu(ui)) {
    if (!on_gpu(pi)) {
      pack::unpack_pieces_host(pieces, n, static_cast<const char*>(packed));
      return ok_status();
    }
    DeviceScope scope(pi.device);
    auto s = stream_for(pi.device, Lane::kSync);
    if (!s) return s.error();
    auto tmp = pinned_pool().acquire(bytes);
    if (!tmp) return tmp.error();
    PoolLease lease(pinned_pool(), tmp.value());
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(lease.get(), packed, bytes, cudaMemcpyDeviceToHost, s.value()));
    DTMPI_TRY(finish(pi.device, s.value()));
    pack::unpack_pieces_host(pieces, n, static_cast<const char*>(lease.get()));
    return ok_status();
  }
  DeviceScope scope(ui.device);
  auto s = stream_for(ui.device, Lane::kSync);
  if (!s) return s.error();
  const void* direct = on_gpu(pi) ? packed : pi.device_ptr;
  if (direct) {
    DTMPI_TRY(pack::queue_unpack_pieces(pieces, n, static_cast<const char*>(direct), ui.device, s.value()));
    return finish(ui.device, s.value());
  }
  auto tmp = device_pool(ui.device).acquire(bytes);
  if (!tmp) return tmp.error();
  PoolLease lease(device_pool(ui.device), tmp.value());
  DTMPI_CUDA_CHECK(cudaMemcpyAsync(lease.get(), packed, bytes, cudaMemcpyHostToDevice, s.value()));
  DTMPI_TRY(pack::queue_unpack_pieces(pieces, n, static_cast<const char*>(lease.get()), ui.device, s.value()));
  return finish(ui.device, s.value());
}

Status unpack_received(const ReceivedPiece* pieces, size_t n) {
  std::vector<bool> done(n, false);
  for (size_t first = 0; first < n; ++first) {
    if (done[first]) continue;
    const int device = pieces[first].ui.device;  // every piece of this device in one launch
    std::vector<pack::DevicePiece> batch;
    for (size_t i = first; i < n; ++i)
      if (!done[i] && pieces[i].ui.device == device) {
        batch.push_back({pieces[i].plan, pieces[i].count, pieces[i].user, const_cast<void*>(pieces[i].packed)});
        done[i] = true;
      }
    DeviceScope scope(device);
    auto s = stream_for(device, Lane::kSync);
    if (!s) return s.error();
    DTMPI_TRY(pack::unpack_pieces_device(batch.data(), batch.size(), device, s.value()));
    DTMPI_TRY(finish(device, s.value()));
  }
  return ok_status();
}

}  // namespace dtmpi::runtime
