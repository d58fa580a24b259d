// GPU runtime in a build without CUDA: no pointer is GPU memory, so the GPU
// entry points are never reached; they report so if called.
#include "runtime/gpu.hpp"

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "pack/cpu_pack.hpp"
#include "runtime/host_pool.hpp"
#include "runtime/stats.hpp"

namespace dtmpi::runtime {

bool gpu_enabled() { return false; }
bool copy_engine_layout(const type::PackPlan&, int64_t) { return false; }


Status gpu_pack(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, const PointerInfo&, Lane) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status gpu_unpack(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, const PointerInfo&, Lane) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
bool may_queue_pack(const PointerInfo&, const PointerInfo&) { return false; }
Status gpu_pack_queued(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
Status gpu_unpack_queued(const type::PackPlan&, int64_t, const void*, void*, const PointerInfo&) {
  return Error{kErrUnsupported, "dtmpi was built without CUDA"};
}
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
Status stage_out(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo&,
                 const Staging& staging, bool) {
  pack::pack_host(plan, count, user, staging.ptr);
  return ok_status();
}
Status stage_in(const type::PackPlan& plan, int64_t count, const Staging& staging, void* user,
                const PointerInfo&, bool) {
  pack::unpack_host(plan, count, staging.ptr, user);
  return ok_status();
}

Status pack_pieces(const PieceRef* pieces, size_t n, const PointerInfo&, void* packed, const PointerInfo&, int64_t) {
  for (size_t i = 0; i < n; ++i)
    if (pieces[i].count > 0)
      pack::pack_host(*pieces[i].plan, pieces[i].count, pieces[i].user, static_cast<char*>(packed) + pieces[i].offset);
  return ok_status();
}
Status unpack_pieces(const PieceRef* pieces, size_t n, const void* packed, const PointerInfo&, const PointerInfo&,
                     int64_t) {
  for (size_t i = 0; i < n; ++i)
    if (pieces[i].count > 0)
      pack::unpack_host(*pieces[i].plan, pieces[i].count, static_cast<const char*>(packed) + pieces[i].offset,
                        pieces[i].user);
  return ok_status();
}
Status stage_out_pieces(const PieceRef* pieces, size_t n, const PointerInfo& ui, const Staging& staging, int64_t total,
                        bool) {
  return pack_pieces(pieces, n, ui, staging.ptr, PointerInfo{}, total);
}
Status stage_in_pieces(const PieceRef* pieces, size_t n, const Staging& staging, const PointerInfo& ui, int64_t total,
                       bool) {
  return unpack_pieces(pieces, n, staging.ptr, PointerInfo{}, ui, total);
}

Result<DeviceBuffer> acquire_device_buffer(int, size_t) { return Error{kErrUnsupported, "built without CUDA"}; }
void release_device_buffer(DeviceBuffer& b) { b.ptr = nullptr; }
int current_device() { return 0; }
Result<GpuMarker> copy_async(void*, const void*, size_t, int) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<GpuMarker> unpack_async(const type::PackPlan&, int64_t, const void*, void*, const PointerInfo&, KernelGate,
                               type::PackedRange) {
  return Error{kErrUnsupported, "built without CUDA"};
}
Result<GpuMarker> mark(int) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<bool> marker_done(GpuMarker) { return true; }
Status wait_marker(GpuMarker) { return ok_status(); }
void release_marker(GpuMarker) {}
Result<IpcRegion> ipc_export(const void*, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<const void*> ipc_open(int, const IpcRegion&, int, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
void ipc_close_all() {}
Result<IpcSignal> ipc_signal_raise(int) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<IpcSignal> ipc_signal_reserve(int, int) { return Error{kErrUnsupported, "built without CUDA"}; }
Status ipc_signal_commit(const IpcSignal&) { return ok_status(); }
void ipc_signal_release(IpcSignal&) {}
Result<const void*> ipc_signal_word(int, const IpcSignal&, int, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
uint64_t gpu_identity(int) { return 0; }
Status ipc_signal_wait(int, const IpcSignal&, int, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
Status pack_to_device_async(const type::PackPlan&, int64_t, const void*, const PointerInfo&, void*, type::PackedRange) {
  return Error{kErrUnsupported, "built without CUDA"};
}
Status wait_stream(int, Lane) { return ok_status(); }
Status unpack_received(const ReceivedPiece*, size_t n) {
  return n ? Error{kErrUnsupported, "built without CUDA"} : ok_status();
}
Result<GpuMarker> pack_later(const type::PlanPtr&, int64_t, const void*, const PointerInfo&, void*, const IpcSignal&) {
  return Error{kErrUnsupported, "built without CUDA"};
}
Status flush_packs(int) { return ok_status(); }
Status copy_bytes(void* dst, const void* src, size_t bytes, int) {
  if (bytes) std::memcpy(dst, src, bytes);
  return ok_status();
}
Result<DeviceBuffer> pack_to_device_buffer(const type::PackPlan&, int64_t, const void*, const PointerInfo&) {
  return Error{kErrUnsupported, "built without CUDA"};
}

std::string gpu_pool_stats() { return "built without CUDA"; }
void release_gpu_resources() {}

}  // namespace dtmpi::runtime
