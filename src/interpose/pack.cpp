// MPI_Pack / MPI_Unpack / MPI_Pack_size on host memory. dtmpi serves a call
// only when it is valid and the type has a plan; anything questionable goes to
// the system MPI, which then reports the error class it always reports,
// through the communicator's error handler. One exception: a packed buffer
// too small for a planned type is reported by dtmpi itself (MPI_ERR_TRUNCATE,
// Open MPI's class), because some system MPIs (Debian's MPICH 4.0) do not
// check and write past the buffer.
#include <climits>
#include <cstdint>

#include "interpose/export.hpp"
#include "pack/cpu_pack.hpp"
#include "runtime/config.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/stats.hpp"
#include "type/registry.hpp"

namespace rt = dtmpi::runtime;
using dtmpi::type::PackPlan;

namespace {

// The plan for `count` elements of `type` moving through a packed buffer at
// *position (and their byte count), or null if the call must go to the system MPI.
const PackPlan* servable(int count, MPI_Datatype type, const void* user, const void* packed,
                 const int* position, MPI_Comm comm, int64_t* bytes) {
  if (!rt::active() || !rt::config().host_pack) return nullptr;
  if (count <= 0 || position == nullptr || *position < 0 || comm == MPI_COMM_NULL) return nullptr;
  if (user == nullptr || packed == nullptr) return nullptr;  // MPI_BOTTOM etc.: let MPI decide
  const PackPlan* plan = dtmpi::type::find_plan(type);
  if (!plan) return nullptr;
  *bytes = int64_t{count} * plan->size;
  return plan;
}

int report_truncation(MPI_Comm comm) {
  PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
  return MPI_ERR_TRUNCATE;
}

}  // namespace

DTMPI_EXPORT int MPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf,
                          int outsize, int* position, MPI_Comm comm) {
  int64_t bytes = 0;
  const PackPlan* plan = servable(incount, datatype, inbuf, outbuf, position, comm, &bytes);
  if (plan && *position + bytes > outsize) return report_truncation(comm);
  if (plan) {
    dtmpi::pack::pack_host(*plan, incount, inbuf, static_cast<char*>(outbuf) + *position);
    *position += static_cast<int>(bytes);
    rt::count(rt::Counter::kPacks);
    rt::count(rt::Counter::kPackedBytes, static_cast<uint64_t>(bytes));
    return MPI_SUCCESS;
  }
  if (rt::active()) rt::count(rt::Counter::kForwarded);
  return REAL(MPI_Pack)(inbuf, incount, datatype, outbuf, outsize, position, comm);
}

DTMPI_EXPORT int MPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf,
                            int outcount, MPI_Datatype datatype, MPI_Comm comm) {
  int64_t bytes = 0;
  const PackPlan* plan = servable(outcount, datatype, outbuf, inbuf, position, comm, &bytes);
  if (plan && *position + bytes > insize) return report_truncation(comm);
  if (plan) {
    dtmpi::pack::unpack_host(*plan, outcount, static_cast<const char*>(inbuf) + *position, outbuf);
    *position += static_cast<int>(bytes);
    rt::count(rt::Counter::kUnpacks);
    rt::count(rt::Counter::kPackedBytes, static_cast<uint64_t>(bytes));
    return MPI_SUCCESS;
  }
  if (rt::active()) rt::count(rt::Counter::kForwarded);
  return REAL(MPI_Unpack)(inbuf, insize, position, outbuf, outcount, datatype, comm);
}

DTMPI_EXPORT int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  // The system MPI's bound is valid for dtmpi's packer too (which writes
  // exactly count * type size bytes), so the answer is always the system's.
  return REAL(MPI_Pack_size)(incount, datatype, comm, size);
}
