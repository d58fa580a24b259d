// Point-to-point entry points. Host-memory traffic is a pass-through: a plan
// lookup and one pointer query in front of the system MPI. A buffer in GPU
// memory (which a non-CUDA-aware MPI cannot take) travels as packed bytes in
// a pinned host buffer (one-shot or staged, DTMPI_METHOD), sent with the
// system MPI on the user's own (communicator, peer, tag) as MPI_PACKED. One
// message per transfer, matched by the system MPI: wildcards, ordering and
// truncation behave exactly as MPI defines them, whatever the other side's
// memory. See docs/point-to-point.md.
#include <vector>

#include "base/log.hpp"
#include "interpose/export.hpp"
#include "runtime/config.hpp"
#include "runtime/gpu.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/requests.hpp"
#include "runtime/stats.hpp"
#include "type/registry.hpp"

namespace rt = dtmpi::runtime;

namespace {

constexpr int64_t kOneShotLimit = 256 * 1024;

// A buffer that must be staged, with everything needed to do it.
struct Staged {
  dtmpi::type::PlanPtr plan;
  rt::PointerInfo info;
  int64_t bytes = 0;
  bool via_device = false;
};

// Decides whether (buf, count, type) must be staged; false: pass through.
bool must_stage(const void* buf, int count, MPI_Datatype type, Staged& s) {
  if (!rt::active() || count <= 0 || buf == nullptr) return false;
  const bool gpu = rt::gpu_enabled();
  if (!gpu && !rt::config().test_stage_host) return false;
  const dtmpi::type::PackPlan* known = dtmpi::type::find_plan(type);
  if (gpu) {
    s.info = rt::pointer_info(static_cast<const char*>(buf) + (known ? known->first_byte : 0));
    if (!rt::on_gpu(s.info)) {
      if (!rt::config().test_stage_host || !known) return false;
    }
  } else if (!known) {
    return false;  // host test mode: derived types only
  }
  s.plan = dtmpi::type::plan_for(type);
  if (!s.plan) {
    if (rt::on_gpu(s.info))
      DTMPI_LOG(kError, "a GPU buffer with a datatype dtmpi cannot plan: passed to the system MPI");
    return false;
  }
  s.bytes = int64_t{count} * s.plan->size;
  const std::string& m = rt::config().method;
  s.via_device = m == "staged" || (m != "oneshot" && s.bytes > kOneShotLimit);
  return s.bytes <= INT32_MAX;
}

int raise(MPI_Comm comm, int code) {
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

// Packs a staged send into a new staging buffer.
int stage_send(const void* buf, int count, const Staged& s, rt::Staging& out, MPI_Comm comm) {
  auto st = rt::acquire_staging(static_cast<size_t>(s.bytes));
  if (!st) return raise(comm, MPI_ERR_NO_MEM);
  out = st.value();
  rt::count(rt::Counter::kStagedSends);
  auto ok = rt::stage_out(*s.plan, count, buf, s.info, out, s.via_device);
  if (!ok) {
    DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", ok.error().what.c_str());
    rt::release_staging(out);
    return raise(comm, MPI_ERR_OTHER);
  }
  return MPI_SUCCESS;
}

// Prepares a staged receive: the op to finish later and its staging buffer.
int begin_receive(void* buf, int count, const Staged& s, rt::PendingOp& op, MPI_Comm comm) {
  auto st = rt::acquire_staging(static_cast<size_t>(s.bytes));
  if (!st) return raise(comm, MPI_ERR_NO_MEM);
  rt::count(rt::Counter::kStagedRecvs);
  op.kind = rt::PendingOp::Kind::kRecv;
  op.plan = s.plan;
  op.count = count;
  op.user = buf;
  op.user_info = s.info;
  op.via_device = s.via_device;
  op.staging = st.value();
  return MPI_SUCCESS;
}

using SendFn = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm);

int send_staged(SendFn send, const void* buf, int count, const Staged& s, int dest, int tag, MPI_Comm comm) {
  rt::Staging st;
  if (int rc = stage_send(buf, count, s, st, comm); rc != MPI_SUCCESS) return rc;
  int rc = send(st.ptr, static_cast<int>(s.bytes), MPI_PACKED, dest, tag, comm);
  rt::release_staging(st);
  return rc;
}

}  // namespace

DTMPI_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm) {
  Staged s;
  if (must_stage(buf, count, datatype, s)) return send_staged(REAL(MPI_Send), buf, count, s, dest, tag, comm);
  return REAL(MPI_Send)(buf, count, datatype, dest, tag, comm);
}

DTMPI_EXPORT int MPI_Ssend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm) {
  Staged s;
  if (must_stage(buf, count, datatype, s)) return send_staged(REAL(MPI_Ssend), buf, count, s, dest, tag, comm);
  return REAL(MPI_Ssend)(buf, count, datatype, dest, tag, comm);
}

DTMPI_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, MPI_Status* status) {
  Staged s;
  if (!must_stage(buf, count, datatype, s)) return REAL(MPI_Recv)(buf, count, datatype, source, tag, comm, status);
  rt::PendingOp op;
  if (int rc = begin_receive(buf, count, s, op, comm); rc != MPI_SUCCESS) return rc;
  MPI_Status local;
  int rc = REAL(MPI_Recv)(op.staging.ptr, static_cast<int>(s.bytes), MPI_PACKED, source, tag, comm, &local);
  local.MPI_ERROR = rc;
  int urc = rc == MPI_SUCCESS ? rt::finish_receive(op, &local) : MPI_SUCCESS;
  rt::release_staging(op.staging);
  if (status != MPI_STATUS_IGNORE) *status = local;
  if (urc != MPI_SUCCESS) return raise(comm, urc);
  return rc;
}

DTMPI_EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request* request) {
  Staged s;
  if (!must_stage(buf, count, datatype, s)) return REAL(MPI_Isend)(buf, count, datatype, dest, tag, comm, request);
  rt::PendingOp op;  // a send keeps only its staging buffer until completion
  if (int rc = stage_send(buf, count, s, op.staging, comm); rc != MPI_SUCCESS) return rc;
  int rc = REAL(MPI_Isend)(op.staging.ptr, static_cast<int>(s.bytes), MPI_PACKED, dest, tag, comm, request);
  if (rc != MPI_SUCCESS) {
    rt::release_staging(op.staging);
    return rc;
  }
  rt::track(*request, std::move(op));
  return rc;
}

DTMPI_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Request* request) {
  Staged s;
  if (!must_stage(buf, count, datatype, s))
    return REAL(MPI_Irecv)(buf, count, datatype, source, tag, comm, request);
  rt::PendingOp op;
  if (int rc = begin_receive(buf, count, s, op, comm); rc != MPI_SUCCESS) return rc;
  int rc = REAL(MPI_Irecv)(op.staging.ptr, static_cast<int>(s.bytes), MPI_PACKED, source, tag, comm, request);
  if (rc != MPI_SUCCESS) {
    rt::release_staging(op.staging);
    return rc;
  }
  rt::track(*request, std::move(op));
  return rc;
}

DTMPI_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                              int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                              int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  Staged ss, rs;
  const bool stage_s = must_stage(sendbuf, sendcount, sendtype, ss);
  const bool stage_r = must_stage(recvbuf, recvcount, recvtype, rs);
  if (!stage_s && !stage_r)
    return REAL(MPI_Sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                              source, recvtag, comm, status);
  // both halves through the request path, so either side may be staged
  MPI_Request reqs[2];
  int rc = MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &reqs[1]);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status sts[2];
  rc = MPI_Waitall(2, reqs, sts);
  if (status != MPI_STATUS_IGNORE) *status = sts[0];
  if (rc == MPI_ERR_IN_STATUS) rc = sts[0].MPI_ERROR != MPI_SUCCESS ? sts[0].MPI_ERROR : sts[1].MPI_ERROR;
  return rc;
}

DTMPI_EXPORT int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                      int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  Staged s;
  if (!must_stage(buf, count, datatype, s))
    return REAL(MPI_Sendrecv_replace)(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
  // pack first, then the receive may overwrite the buffer
  rt::Staging out;
  if (int rc = stage_send(buf, count, s, out, comm); rc != MPI_SUCCESS) return rc;
  rt::PendingOp op;
  if (int rc = begin_receive(buf, count, s, op, comm); rc != MPI_SUCCESS) {
    rt::release_staging(out);
    return rc;
  }
  MPI_Status local;
  int rc = REAL(MPI_Sendrecv)(out.ptr, static_cast<int>(s.bytes), MPI_PACKED, dest, sendtag, op.staging.ptr,
                              static_cast<int>(s.bytes), MPI_PACKED, source, recvtag, comm, &local);
  local.MPI_ERROR = rc;
  int urc = rc == MPI_SUCCESS ? rt::finish_receive(op, &local) : MPI_SUCCESS;
  rt::release_staging(out);
  rt::release_staging(op.staging);
  if (status != MPI_STATUS_IGNORE) *status = local;
  if (urc != MPI_SUCCESS) return raise(comm, urc);
  return rc;
}
