// Point-to-point entry points: the MPI signatures and the decision whether
// dtmpi serves a call (interpose/p2p_route.hpp). Host-memory traffic is a
// pass-through: a plan lookup and one pointer query in front of the system
// MPI (plus, for receives of at least transport::kMultiMin bytes in a job that
// uses GPUs, a look at whether what arrived is a multi-message descriptor).
// What dtmpi serves goes to the protocol's one entry, transport/p2p.hpp.
// See docs/point-to-point.md.
#include "base/log.hpp"
#include "base/trace.hpp"
#include "interpose/entries.hpp"
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
using dtmpi::Error;
using dtmpi::Status;
using dtmpi::interpose::must_stage;
using dtmpi::interpose::plain_host;
using dtmpi::interpose::recv_stashed;
using dtmpi::interpose::RecvRoute;
using dtmpi::interpose::refusal;
using dtmpi::interpose::result;
using dtmpi::interpose::route_receive;

namespace {

using tp::SendMode;

// A send in `mode` (`request` null: blocking): dtmpi's transport for a
// buffer it stages, else `forward()`, the system MPI's call of the same name.
template <class Forward>
Status send(SendMode mode, const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
            MPI_Request* request, Forward forward) {
  tp::poll();
  tp::UserBuffer b;
  if (must_stage(buf, count, datatype, b)) return tp::send(mode, b, dest, tag, comm, request);
  if (b.refused) return refusal(b);
  return DTMPI_MPI_FORWARD(forward());
}

}  // namespace

#define DTMPI_BLOCKING_SEND(NAME, MODE)                                                                        \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) { \
    DTMPI_TRACE(#NAME ": entry");                                                                              \
    tp::poll();                                                                                                \
    if (plain_host(buf, count, datatype, INT64_MAX)) return REAL(NAME)(buf, count, datatype, dest, tag, comm);  \
    return result(comm, send(MODE, buf, count, datatype, dest, tag, comm, nullptr,                             \
                             [&] { return REAL(NAME)(buf, count, datatype, dest, tag, comm); }));              \
  }
#define DTMPI_NONBLOCKING_SEND(NAME, MODE)                                                                   \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, \
                        MPI_Request* request) {                                                              \
    DTMPI_TRACE(#NAME ": entry");                                                                            \
    tp::poll();                                                                                              \
    if (plain_host(buf, count, datatype, INT64_MAX))                                                         \
      return REAL(NAME)(buf, count, datatype, dest, tag, comm, request);                                     \
    return result(comm, send(MODE, buf, count, datatype, dest, tag, comm, request,                           \
                             [&] { return REAL(NAME)(buf, count, datatype, dest, tag, comm, request); }));   \
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

namespace dtmpi::interpose {

Status isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  DTMPI_TRACE("isend: entry");
  return send(SendMode::kStandard, buf, count, type, dest, tag, comm, request,
              [&] { return REAL(MPI_Isend)(buf, count, type, dest, tag, comm, request); });
}

Status recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  DTMPI_TRACE("MPI_Recv: entry");
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag)) return recv_stashed(buf, count, type, comm, *e, status, nullptr);
  RecvRoute r;
  if (!route_receive(buf, count, type, r)) {
    if (r.buffer.refused) return refusal(r.buffer);
    return DTMPI_MPI_FORWARD(REAL(MPI_Recv)(buf, count, type, source, tag, comm, status));
  }
  return tp::receive(r, comm, tp::Arrival{source, tag, nullptr}, status, nullptr);
}

Status irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request,
             int64_t multi_min) {
  DTMPI_TRACE("MPI_Irecv: entry");
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag))
      return recv_stashed(buf, count, type, comm, *e, MPI_STATUS_IGNORE, request);
  RecvRoute r;
  if (!route_receive(buf, count, type, r, multi_min)) {
    if (r.buffer.refused) return refusal(r.buffer);
    return DTMPI_MPI_FORWARD(REAL(MPI_Irecv)(buf, count, type, source, tag, comm, request));
  }
  return tp::receive(r, comm, tp::Arrival{source, tag, nullptr}, MPI_STATUS_IGNORE, request);
}

// Probes see a multi-message transfer with its real size (transport/stash.hpp).
Status iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  tp::poll();
  if (!tp::descriptors_possible() && !tp::stash_any())
    return DTMPI_MPI_FORWARD(REAL(MPI_Iprobe)(source, tag, comm, flag, status));
  return tp::iprobe(source, tag, comm, flag, status);
}

}  // namespace dtmpi::interpose

DTMPI_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                          MPI_Status* status) {
  // the commonest receive, decided inline (interpose::plain_host; issue 29)
  tp::poll();
  if (!tp::stash_any() && plain_host(buf, count, datatype, tp::kMultiMin))
    return REAL(MPI_Recv)(buf, count, datatype, source, tag, comm, status);
  return result(comm, dtmpi::interpose::recv(buf, count, datatype, source, tag, comm, status));
}

DTMPI_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                           MPI_Request* request) {
  tp::poll();
  if (!tp::stash_any() && plain_host(buf, count, datatype, tp::kMultiMin))
    return REAL(MPI_Irecv)(buf, count, datatype, source, tag, comm, request);
  return result(comm, dtmpi::interpose::irecv(buf, count, datatype, source, tag, comm, request));
}

DTMPI_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                              MPI_Comm comm, MPI_Status* status) {
  tp::poll();
  tp::UserBuffer sb;
  RecvRoute r;
  const bool stage_s = must_stage(sendbuf, sendcount, sendtype, sb);
  const bool stage_r = route_receive(recvbuf, recvcount, recvtype, r);
  if (sb.refused) return result(comm, refusal(sb));
  if (r.buffer.refused) return result(comm, refusal(r.buffer));
  if (!stage_s && !stage_r)
    return REAL(MPI_Sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                              recvtag, comm, status);
  // both halves as the interposed MPI_Irecv / MPI_Isend / MPI_Waitall serve
  // them, so either may be staged; a receive from MPI_PROC_NULL is the system
  // MPI's blocking one (MPICH's non-blocking one reports another source and tag)
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status sts[2] = {rt::seeded(status), rt::seeded(MPI_STATUS_IGNORE)};
  const int first = source == MPI_PROC_NULL ? 1 : 0;
  Status done = first ? DTMPI_MPI_FORWARD(REAL(MPI_Recv)(recvbuf, recvcount, recvtype, source, recvtag, comm, &sts[0]))
                      : dtmpi::interpose::irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[0]);
  if (!done) return result(comm, done);
  done = dtmpi::interpose::isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &reqs[1]);
  if (!done) return result(comm, done);
  done = dtmpi::interpose::waitall(2 - first, reqs + first, sts + first);
  if (!done && done.error().code == MPI_ERR_IN_STATUS)  // the error of the half that failed
    done = dtmpi::first_error(dtmpi::mpi_status(sts[0].MPI_ERROR, "", true),
                              dtmpi::mpi_status(sts[1].MPI_ERROR, "", true));
  // MPI_ERROR as the system MPI's MPI_Sendrecv leaves it
  sts[0].MPI_ERROR = rt::writes_error(rt::ErrorWrites::kSendrecv) ? dtmpi::code_of(done) : rt::kErrorUnwritten;
  rt::give_back(sts[0], status);
  return result(comm, done);
}

DTMPI_EXPORT int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                      int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  tp::poll();
  tp::UserBuffer b;
  RecvRoute r;
  const bool staged = must_stage(buf, count, datatype, b);
  if (b.refused) return result(comm, refusal(b));
  if (!staged && !route_receive(buf, count, datatype, r))
    return REAL(MPI_Sendrecv_replace)(buf, count, datatype, dest, sendtag, source, recvtag, comm, status);
  // the outgoing data is copied before the receive may overwrite the buffer:
  // a staged send packs inside the transport's send; a host buffer is packed here
  MPI_Request sreq = MPI_REQUEST_NULL;
  rt::Staging copy;
  Status done = dtmpi::ok_status();
  if (staged) {
    done = tp::send(SendMode::kStandard, b, dest, sendtag, comm, &sreq);
    // a device-method send returns with its pack queued on the transfer
    // stream, and the receive below unpacks on the receive stream: the pack
    // must have read the buffer before the unpack may overwrite it
    if (done && rt::on_gpu(b.info) && !rt::wait_stream(b.info.device))
      done = Error{MPI_ERR_OTHER, "packing a GPU send buffer failed"};
  } else {
    int size = 0;
    done = DTMPI_MPI_STATUS_REPORTED(REAL(MPI_Pack_size)(count, datatype, comm, &size));
    if (!done) return result(comm, done);
    auto st = rt::acquire_staging(static_cast<size_t>(size));
    if (!st) return result(comm, Error{MPI_ERR_NO_MEM, ""});
    copy = st.value();
    int pos = 0;
    done = dtmpi::interpose::pack(buf, count, datatype, copy.ptr, size, &pos, comm);
    if (done) done = DTMPI_MPI_STATUS_REPORTED(REAL(MPI_Isend)(copy.ptr, pos, MPI_PACKED, dest, sendtag, comm, &sreq));
  }
  if (done) done = dtmpi::interpose::recv(buf, count, datatype, source, recvtag, comm, status);
  if (sreq != MPI_REQUEST_NULL)
    done = dtmpi::first_error(std::move(done), dtmpi::interpose::wait(&sreq, MPI_STATUS_IGNORE));
  rt::release_staging(copy);
  // MPI_ERROR as the system MPI's MPI_Sendrecv_replace leaves it (MPICH's writes it)
  if (status != MPI_STATUS_IGNORE && rt::writes_error(rt::ErrorWrites::kSendrecvReplace))
    status->MPI_ERROR = dtmpi::code_of(done);
  return result(comm, done);
}

DTMPI_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  return result(comm, dtmpi::interpose::iprobe(source, tag, comm, flag, status));
}

DTMPI_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!tp::descriptors_possible() && !tp::stash_any() && !tp::busy())
    return REAL(MPI_Probe)(source, tag, comm, status);
  for (;;) {  // polling, so that dtmpi's transfers progress meanwhile
    int flag = 0;
    Status probed = dtmpi::interpose::iprobe(source, tag, comm, &flag, status);
    if (!probed || flag) return result(comm, probed);
  }
}
