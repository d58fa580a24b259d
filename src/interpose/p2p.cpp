// Point-to-point entry points: the MPI signatures and the decision whether
// dtmpi serves a call (interpose/p2p_route.hpp). Host-memory traffic is a
// pass-through: a plan lookup and one pointer query in front of the system
// MPI (plus, for receives of at least transport::kMultiMin bytes in a job that
// uses GPUs, a look at whether what arrived is a multi-message descriptor).
// What dtmpi serves goes to the protocol's one entry, transport/p2p.hpp.
// See docs/point-to-point.md.
#include "base/log.hpp"
#include "base/trace.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "base/system_mpi.hpp"
#include "runtime/buffers.hpp"
#include "runtime/stats.hpp"
#include "runtime/status.hpp"
#include "runtime/streams.hpp"
#include "transport/peers.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::must_stage;
using dtmpi::interpose::plain_host;
using dtmpi::interpose::raise;
using dtmpi::interpose::result;
using dtmpi::interpose::refuse;
using dtmpi::interpose::RecvRoute;
using dtmpi::interpose::route_receive;
using dtmpi::interpose::recv_stashed;

namespace {

using tp::SendMode;

int send_staged(SendMode mode, const tp::UserBuffer& b, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  return dtmpi::interpose::result(comm, tp::send(mode, b, dest, tag, comm, request));
}

int receive_routed(const RecvRoute& r, int source, int tag, MPI_Comm comm, MPI_Status* status, MPI_Request* request) {
  return dtmpi::interpose::result(comm, tp::receive(r, comm, tp::Arrival{source, tag, nullptr}, status, request));
}

}  // namespace

#define DTMPI_BLOCKING_SEND(NAME, MODE)                                                                \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,          \
                        MPI_Comm comm) {                                                               \
    DTMPI_TRACE(#NAME ": entry");                                                                      \
    tp::poll();                                                                                        \
    if (plain_host(buf, count, datatype, INT64_MAX)) return REAL(NAME)(buf, count, datatype, dest, tag, comm); \
    tp::UserBuffer b;                                                                                  \
    if (must_stage(buf, count, datatype, b)) return send_staged(MODE, b, dest, tag, comm, nullptr);    \
    if (b.refused) return refuse(comm, b);                                                             \
    return REAL(NAME)(buf, count, datatype, dest, tag, comm);                                          \
  }
#define DTMPI_NONBLOCKING_SEND(NAME, MODE)                                                             \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,          \
                        MPI_Comm comm, MPI_Request* request) {                                         \
    DTMPI_TRACE(#NAME ": entry");                                                                      \
    tp::poll();                                                                                        \
    DTMPI_TRACE(#NAME ": polled");                                                                     \
    if (plain_host(buf, count, datatype, INT64_MAX))                                                   \
      return REAL(NAME)(buf, count, datatype, dest, tag, comm, request);                               \
    tp::UserBuffer b;                                                                                  \
    if (must_stage(buf, count, datatype, b)) return send_staged(MODE, b, dest, tag, comm, request);    \
    if (b.refused) return refuse(comm, b);                                                             \
    return REAL(NAME)(buf, count, datatype, dest, tag, comm, request);                                 \
  }

// Ready mode is a hint an implementation may treat as standard mode.
DTMPI_BLOCKING_SEND(MPI_Send, SendMode::kStandard)
DTMPI_BLOCKING_SEND(MPI_Rsend, SendMode::kStandard)
DTMPI_BLOCKING_SEND(MPI_Ssend, SendMode::kSynchronous)
DTMPI_BLOCKING_SEND(MPI_Bsend, SendMode::kBuffered)
DTMPI_NONBLOCKING_SEND(MPI_Isend, SendMode::kStandard)
DTMPI_NONBLOCKING_SEND(MPI_Irsend, SendMode::kStandard)
DTMPI_NONBLOCKING_SEND(MPI_Issend, SendMode::kSynchronous)
DTMPI_NONBLOCKING_SEND(MPI_Ibsend, SendMode::kBuffered)

DTMPI_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                          MPI_Status* status) {
  DTMPI_TRACE("MPI_Recv: entry");
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag)) return recv_stashed(buf, count, datatype, comm, *e, status, nullptr);
  if (plain_host(buf, count, datatype, tp::kMultiMin)) return REAL(MPI_Recv)(buf, count, datatype, source, tag, comm, status);
  RecvRoute r;
  if (!route_receive(buf, count, datatype, r)) {
    if (r.buffer.refused) return refuse(comm, r.buffer);
    return REAL(MPI_Recv)(buf, count, datatype, source, tag, comm, status);
  }
  return receive_routed(r, source, tag, comm, status, nullptr);
}

namespace {

int irecv_from(int64_t multi_min, void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request* request) {
  DTMPI_TRACE("MPI_Irecv: entry");
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag))
      return recv_stashed(buf, count, datatype, comm, *e, MPI_STATUS_IGNORE, request);
  if (plain_host(buf, count, datatype, multi_min)) return REAL(MPI_Irecv)(buf, count, datatype, source, tag, comm, request);
  RecvRoute r;
  if (!route_receive(buf, count, datatype, r, multi_min)) {
    if (r.buffer.refused) return refuse(comm, r.buffer);
    return REAL(MPI_Irecv)(buf, count, datatype, source, tag, comm, request);
  }
  return receive_routed(r, source, tag, comm, MPI_STATUS_IGNORE, request);
}

}  // namespace

int dtmpi::interpose::irecv_piece(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                                  MPI_Request* request) {
  return irecv_from(tp::kInPlaceMin, buf, count, type, source, tag, comm, request);
}

DTMPI_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                           MPI_Request* request) {
  return irecv_from(tp::kMultiMin, buf, count, datatype, source, tag, comm, request);
}

DTMPI_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                              MPI_Comm comm, MPI_Status* status) {
  tp::poll();
  tp::UserBuffer sb;
  RecvRoute r;
  const bool stage_s = must_stage(sendbuf, sendcount, sendtype, sb);
  const bool stage_r = route_receive(recvbuf, recvcount, recvtype, r);
  if (sb.refused) return refuse(comm, sb);
  if (r.buffer.refused) return refuse(comm, r.buffer);
  if (!stage_s && !stage_r)
    return REAL(MPI_Sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                              recvtag, comm, status);
  // both halves through the interposed request path, so either may be staged;
  // a receive from MPI_PROC_NULL is the system MPI's blocking one (MPICH's
  // non-blocking one reports another source and tag)
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status sts[2] = {rt::seeded(status), rt::seeded(MPI_STATUS_IGNORE)};
  const int first = source == MPI_PROC_NULL ? 1 : 0;
  int rc = first ? REAL(MPI_Recv)(recvbuf, recvcount, recvtype, source, recvtag, comm, &sts[0])
                 : MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &reqs[1]);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Waitall(2 - first, reqs + first, sts + first);
  if (rc == MPI_ERR_IN_STATUS) rc = sts[0].MPI_ERROR != MPI_SUCCESS ? sts[0].MPI_ERROR : sts[1].MPI_ERROR;
  // MPI_ERROR as the system MPI's MPI_Sendrecv leaves it
  sts[0].MPI_ERROR = rt::writes_error(rt::ErrorWrites::kSendrecv) ? rc : rt::kErrorUnwritten;
  rt::give_back(sts[0], status);
  return rc;
}

DTMPI_EXPORT int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                      int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  tp::poll();
  tp::UserBuffer b;
  RecvRoute r;
  const bool staged = must_stage(buf, count, datatype, b);
  if (b.refused) return refuse(comm, b);
  if (!staged && !route_receive(buf, count, datatype, r))
    return REAL(MPI_Sendrecv_replace)(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
  // the outgoing data is copied before the receive may overwrite the buffer:
  // a staged send packs inside MPI_Isend; a host buffer is packed here
  MPI_Request sreq = MPI_REQUEST_NULL;
  rt::Staging copy;
  int rc;
  if (staged) {
    rc = MPI_Isend(buf, count, datatype, dest, sendtag, comm, &sreq);
    // a device-method send returns with its pack queued on the transfer
    // stream, and the receive below unpacks on the receive stream: the pack
    // must have read the buffer before the unpack may overwrite it
    if (rc == MPI_SUCCESS && rt::on_gpu(b.info) && !rt::wait_stream(b.info.device)) {
      DTMPI_LOG(kError, "packing a GPU send buffer failed");
      rc = raise(comm, MPI_ERR_OTHER);
    }
  } else {
    int size = 0;
    REAL(MPI_Pack_size)(count, datatype, comm, &size);
    auto st = rt::acquire_staging(static_cast<size_t>(size));
    if (!st) return raise(comm, MPI_ERR_NO_MEM);
    copy = st.value();
    int pos = 0;
    rc = MPI_Pack(buf, count, datatype, copy.ptr, size, &pos, comm);
    if (rc == MPI_SUCCESS) rc = REAL(MPI_Isend)(copy.ptr, pos, MPI_PACKED, dest, sendtag, comm, &sreq);
  }
  if (rc == MPI_SUCCESS) rc = MPI_Recv(buf, count, datatype, source, recvtag, comm, status);
  if (sreq != MPI_REQUEST_NULL) {
    int wrc = MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = wrc;
  }
  rt::release_staging(copy);
  // MPI_ERROR as the system MPI's MPI_Sendrecv_replace leaves it (MPICH's writes it)
  if (status != MPI_STATUS_IGNORE && rt::writes_error(rt::ErrorWrites::kSendrecvReplace)) status->MPI_ERROR = rc;
  return rc;
}

// Probes see a multi-message transfer with its real size (transport/stash.hpp).
DTMPI_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  tp::poll();
  if (!tp::descriptors_possible() && !tp::stash_any()) return REAL(MPI_Iprobe)(source, tag, comm, flag, status);
  return result(comm, tp::iprobe(source, tag, comm, flag, status));
}

DTMPI_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!tp::descriptors_possible() && !tp::stash_any() && !tp::busy())
    return REAL(MPI_Probe)(source, tag, comm, status);
  for (;;) {  // polling, so that dtmpi's transfers progress meanwhile
    int flag = 0;
    int rc = MPI_Iprobe(source, tag, comm, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}
