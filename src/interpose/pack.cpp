// MPI_Pack / MPI_Unpack / MPI_Pack_size. dtmpi serves a call when it is valid
// and the type has a plan: on host memory with the CPU packer, and whenever
// either buffer is GPU memory with the GPU packers (the system MPI may not be
// CUDA-aware). Anything questionable goes to the system MPI, which then reports
// the error class it always reports, through the communicator's error handler.
// One exception: a packed buffer too small for a planned type is reported by
// dtmpi itself (MPI_ERR_TRUNCATE, as Open MPI does; nothing written), because
// some system MPIs do not check: Debian's MPICH 4.0 packs the basic elements
// that fit and returns success (docs/architecture.md).
#include <climits>
#include <cstdint>

#include "base/log.hpp"
#include "base/trace.hpp"
#include "interpose/boundary.hpp"
#include "interpose/entries.hpp"
#include "interpose/export.hpp"
#include "pack/cpu_pack.hpp"
#include "runtime/buffer_hint.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/device_pack.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"
#include "runtime/stats.hpp"
#include "transport/peers.hpp"
#include "type/registry.hpp"

namespace rt = dtmpi::runtime;
using dtmpi::Error;
using dtmpi::Result;
using dtmpi::Status;
using dtmpi::type::PackPlan;

namespace {

// Whether either buffer of a call lies in GPU memory (`user` classified at the
// first byte the type touches, when a plan says where that is).
bool touches_gpu(const PackPlan* plan, MPI_Datatype type, const void* user, const void* packed) {
  if (!rt::gpu_enabled()) return false;
  return rt::on_gpu(rt::buffer_info(static_cast<const char*>(user) + (plan ? plan->first_byte : 0), type)) ||
         rt::on_gpu(rt::pointer_info(packed));
}

// The plan for `count` elements of `type` moving through a packed buffer at
// *position (and their byte count), or null if the call must go to the system
// MPI. Derived types have their plans from commit; a predefined type is
// planned here when a buffer is GPU memory (the system MPI may not be
// CUDA-aware). `*refused`: GPU memory no plan serves, an MPI error class.
const PackPlan* servable(int count, MPI_Datatype type, const void* user, const void* packed,
                         const int* position, MPI_Comm comm, int64_t* bytes, int* refused) {
  *refused = 0;
  if (!rt::active()) return nullptr;
  if (count <= 0 || position == nullptr || *position < 0 || comm == MPI_COMM_NULL) return nullptr;
  if (packed == nullptr) return nullptr;  // let MPI report it
  const PackPlan* plan = dtmpi::type::find_plan(type);
  // MPI_BOTTOM (null in every MPI) with a derived type: absolute displacements
  if (user == nullptr && !plan) return nullptr;
  if (!plan) {
    if (!touches_gpu(nullptr, type, user, packed)) return nullptr;
    dtmpi::type::PlanPtr named = dtmpi::type::plan_for(type);  // kept by the registry
    plan = named.get();
    if (!plan) {
      if (!dtmpi::transport::mpi_takes_device_memory()) *refused = MPI_ERR_TYPE;
      return nullptr;
    }
  }
  *bytes = int64_t{count} * plan->size;
  return plan;
}

// GPU memory with a type dtmpi cannot plan: the system MPI must not see it.
Error refusal(int code) {
  return Error{code,
               "MPI_Pack/MPI_Unpack on GPU memory with a datatype dtmpi cannot plan: the system MPI is not "
               "CUDA-aware"};
}

enum class Direction { kPack, kUnpack };

// Moves the bytes of one served call: true once done, false where the system
// MPI should do the call.
Result<bool> serve(Direction dir, const PackPlan& plan, MPI_Datatype type, int count, const void* user, void* packed,
                   int64_t bytes) {
  if (rt::gpu_enabled()) {
    // classify the first byte the type touches: `user` itself may lie outside
    // the allocation (positive lb, MPI_BOTTOM-style absolute displacements)
    const rt::PointerInfo ui = rt::buffer_info(static_cast<const char*>(user) + plan.first_byte, type);
    // next to GPU data, whether a host packed buffer is pinned (also by a
    // cudaHostRegister that pointer_info does not see) decides whether the
    // GPU writes it directly or through a device buffer: the driver's answer
    const rt::PointerInfo pi = rt::on_gpu(ui) ? rt::pointer_info_exact(packed) : rt::pointer_info(packed);
    if (rt::on_gpu(ui) || rt::on_gpu(pi)) {
      DTMPI_TRACE(dir == Direction::kPack ? "MPI_Pack: GPU entry" : "MPI_Unpack: GPU entry");
      DTMPI_LOG(kDebug, "%s %lld bytes: user %p (%s) packed %p (%s)",
                dir == Direction::kPack ? "MPI_Pack" : "MPI_Unpack", static_cast<long long>(bytes), user,
                rt::kind_name(ui.kind), packed, rt::kind_name(pi.kind));
      // DTMPI_PACK_ASYNC: device to device on one GPU, returned once queued
      // (never where the system MPI itself may be handed the buffer next:
      // its streams are not ordered after the legacy stream)
      const bool queued = rt::may_queue_pack(ui, pi) && !dtmpi::transport::mpi_takes_device_memory();
      auto st = queued ? (dir == Direction::kPack
                              ? rt::gpu_pack_queued(plan, count, user, ui, packed)
                              : rt::gpu_unpack_queued(plan, count, packed, const_cast<void*>(user), ui))
                : dir == Direction::kPack ? rt::gpu_pack(plan, count, user, ui, packed, pi)
                                          : rt::gpu_unpack(plan, count, packed, pi, const_cast<void*>(user), ui);
      if (!st)
        return Error{MPI_ERR_OTHER, std::string(dir == Direction::kPack ? "MPI_Pack" : "MPI_Unpack") +
                                        " on GPU memory failed: " + st.error().what};
      DTMPI_TRACE(dir == Direction::kPack ? "MPI_Pack: GPU done" : "MPI_Unpack: GPU done");
      rt::count(rt::Counter::kGpuPacks);
      if (queued) rt::count(rt::Counter::kGpuPacksQueued);
      rt::count(rt::Counter::kPackedBytes, static_cast<uint64_t>(bytes));
      return true;
    }
  }
  if (!rt::config().host_pack) return false;
  if (dir == Direction::kPack)
    dtmpi::pack::pack_host(plan, count, user, packed);
  else
    dtmpi::pack::unpack_host(plan, count, packed, const_cast<void*>(user));
  rt::count(dir == Direction::kPack ? rt::Counter::kPacks : rt::Counter::kUnpacks);
  rt::count(rt::Counter::kPackedBytes, static_cast<uint64_t>(bytes));
  return true;
}

// MPI_Pack and MPI_Unpack: `user` (count, type) and the packed buffer of
// `size` bytes, at *position; `forward()` is the system MPI's call.
template <class Forward>
Status pack_or_unpack(Direction dir, const void* user, int count, MPI_Datatype type, const void* packed, int size,
                      int* position, MPI_Comm comm, Forward forward) {
  int64_t bytes = 0;
  int refused = 0;
  if (const PackPlan* plan = servable(count, type, user, packed, position, comm, &bytes, &refused)) {
    if (*position + bytes > size) return Error{MPI_ERR_TRUNCATE, ""};
    auto served =
        serve(dir, *plan, type, count, user, const_cast<char*>(static_cast<const char*>(packed)) + *position, bytes);
    if (!served) return served.error();
    if (served.value()) {
      *position += static_cast<int>(bytes);
      return dtmpi::ok_status();
    }
  }
  if (refused) return refusal(refused);
  if (rt::active()) rt::count(rt::Counter::kForwarded);
  return DTMPI_MPI_FORWARD(forward());
}

}  // namespace

namespace dtmpi::interpose {

Status pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize, int* position,
            MPI_Comm comm) {
  return pack_or_unpack(Direction::kPack, inbuf, incount, datatype, outbuf, outsize, position, comm,
                        [&] { return REAL(MPI_Pack)(inbuf, incount, datatype, outbuf, outsize, position, comm); });
}

}  // namespace dtmpi::interpose

DTMPI_EXPORT int MPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
                          int* position, MPI_Comm comm) {
  return dtmpi::interpose::result(comm,
                                  dtmpi::interpose::pack(inbuf, incount, datatype, outbuf, outsize, position, comm));
}

DTMPI_EXPORT int MPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf,
                            int outcount, MPI_Datatype datatype, MPI_Comm comm) {
  return dtmpi::interpose::result(
      comm, pack_or_unpack(Direction::kUnpack, outbuf, outcount, datatype, inbuf, insize, position, comm, [&] {
        return REAL(MPI_Unpack)(inbuf, insize, position, outbuf, outcount, datatype, comm);
      }));
}

DTMPI_EXPORT int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  // The system MPI's bound is valid for dtmpi's packers too (which write
  // exactly count * type size bytes), so the answer is always the system's.
  return REAL(MPI_Pack_size)(incount, datatype, comm, size);
}
