// The runtime's GPU units in a build without CUDA (runtime/device.hpp,
// streams.hpp, markers.hpp, buffers.hpp, device_pack.hpp, stream_pack.hpp):
// no pointer is GPU memory, so the GPU entry points are never reached; they
// report so if called. Staging buffers come from the host pool.
#include <mpi.h>

#include <cstring>

#include "pack/pieces.hpp"
#include "runtime/buffers.hpp"
#include "runtime/device.hpp"
#include "runtime/device_pack.hpp"
#include "runtime/host_pool.hpp"
#include "runtime/markers.hpp"
#include "runtime/peer_bandwidth.hpp"
#include "runtime/stats.hpp"
#include "runtime/stream_pack.hpp"
#include "runtime/streams.hpp"

namespace dtmpi::runtime {

// device.hpp
bool gpu_enabled() { return false; }
int current_device() { return 0; }
bool primary_context_active(int) { return false; }
Result<std::vector<double>> measure_peer_bandwidth(const std::vector<int>&) {
  return Error{MPI_ERR_OTHER, "measuring the bandwidth between GPUs needs dtmpi built with CUDA"};
}
std::string gpu_pool_stats() { return "built without CUDA"; }
void release_gpu_resources() {}

// streams.hpp
Status wait_stream(int, Lane) { return ok_status(); }
Status copy_bytes(void* dst, const void* src, size_t bytes, int) {
  if (bytes) std::memcpy(dst, src, bytes);
  return ok_status();
}

// markers.hpp
Result<GpuMarker> copy_async(void*, const void*, size_t, int) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<GpuMarker> mark(int) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<bool> marker_done(GpuMarker) { return true; }
Status wait_marker(GpuMarker) { return ok_status(); }
void release_marker(GpuMarker) {}

// buffers.hpp
Result<DeviceBuffer> acquire_device_buffer(int, size_t) { return Error{kErrUnsupported, "built without CUDA"}; }
void release_device_buffer(DeviceBuffer& b) { b.ptr = nullptr; }
Result<Staging> acquire_staging(size_t bytes) {
  count(Counter::kStagingAcquired);
  const HostBuffer h = host_pool_acquire(bytes);
  if (!h.ptr) return Error{MPI_ERR_NO_MEM, "staging buffer"};
  Staging s;
  s.ptr = h.ptr;
  s.capacity = h.capacity;
  s.cls = h.cls;
  return s;
}
void release_staging(Staging& s) {
  if (!s.ptr) return;
  count(Counter::kStagingReleased);
  host_pool_release(HostBuffer{s.ptr, s.capacity, s.cls});
  s.ptr = nullptr;
}

// device_pack.hpp
Status gpu_pack(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, const PointerInfo&, Lane) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status gpu_unpack(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, const PointerInfo&, Lane) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status gpu_copy_layout(const type::PackPlan&, int64_t, const void*, const type::PackPlan&, int64_t, void*, int64_t,
                       int) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
bool may_queue_pack(const PointerInfo&, const PointerInfo&) { return false; }
Status gpu_pack_queued(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status gpu_unpack_queued(const type::PackPlan&, int64_t, const void*, void*, const PointerInfo&) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status pack_pieces(const pack::PieceRef* pieces, size_t n, const PointerInfo&, void* packed, const PointerInfo&,
                   int64_t) {
  pack::pack_pieces_host(pieces, n, static_cast<char*>(packed));
  return ok_status();
}
Status unpack_pieces(const pack::PieceRef* pieces, size_t n, const void* packed, const PointerInfo&,
                     const PointerInfo&, int64_t) {
  pack::unpack_pieces_host(pieces, n, static_cast<const char*>(packed));
  return ok_status();
}
Status unpack_received(const ReceivedPiece*, size_t n) {
  return n ? Error{kErrUnsupported, "built without CUDA"} : ok_status();
}

// stream_pack.hpp
Status pack_to_device_async(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, type::PackedRange) {
  return Error{kErrUnsupported, "built without CUDA"};
}
Result<DeviceBuffer> pack_to_device_buffer(const type::PackPlan&, int64_t, const void*, const PointerInfo&) {
  return Error{kErrUnsupported, "built without CUDA"};
}
Result<GpuMarker> unpack_async(const type::PackPlan&, int64_t, const void*, void*, const PointerInfo&, KernelGate,
                               type::PackedRange) {
  return Error{kErrUnsupported, "built without CUDA"};
}

}  // namespace dtmpi::runtime
