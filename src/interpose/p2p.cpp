// Point-to-point entry points. Host-memory traffic is a pass-through: a plan
// lookup and one pointer query in front of the system MPI (plus, for receives
// of at least transport::kMultiMin bytes in a job that uses GPUs, a look at
// whether what arrived is a multi-message descriptor). A buffer in GPU memory
// (which a non-CUDA-aware MPI cannot take) goes through src/transport: one
// message of packed bytes on the user's own (communicator, peer, tag), or a
// descriptor on that envelope and the rest on a private communicator.
// See docs/point-to-point.md.
#include "base/log.hpp"
#include "base/trace.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/requests.hpp"
#include "runtime/stats.hpp"
#include "runtime/status.hpp"
#include "transport/peers.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::must_stage;
using dtmpi::interpose::raise;
using dtmpi::interpose::refuse;
using dtmpi::interpose::RecvRoute;
using dtmpi::interpose::route_receive;

namespace {

enum class Mode { kStandard, kSynchronous, kBuffered };

// Packs a single-message send into a new staging buffer.
int stage_send(const tp::UserBuffer& b, bool via_device, rt::Staging& out, MPI_Comm comm) {
  DTMPI_TRACE("send: one message");
  auto st = rt::acquire_staging(static_cast<size_t>(b.bytes));
  if (!st) return raise(comm, MPI_ERR_NO_MEM);
  out = st.value();
  DTMPI_TRACE("send: staging acquired");
  rt::count(rt::Counter::kStagedSends);
  auto ok = rt::stage_out(*b.plan, b.count, b.ptr, b.info, out, via_device);
  if (!ok) {
    DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", ok.error().what.c_str());
    rt::release_staging(out);
    return raise(comm, MPI_ERR_OTHER);
  }
  return MPI_SUCCESS;
}

// A send through a CUDA-aware system MPI: the packed device buffer.
int send_device(Mode mode, const tp::UserBuffer& b, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  rt::PendingOp op;
  auto dev = rt::pack_to_device_buffer(*b.plan, b.count, b.ptr, b.info);
  if (!dev) {
    DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", dev.error().what.c_str());
    return raise(comm, MPI_ERR_OTHER);
  }
  op.device = dev.value();
  rt::count(rt::Counter::kDeviceSends);
  const int n = static_cast<int>(b.bytes);
  void* p = op.device.ptr;
  int rc;
  if (!request) {
    rc = mode == Mode::kSynchronous ? REAL(MPI_Ssend)(p, n, MPI_PACKED, dest, tag, comm)
         : mode == Mode::kBuffered  ? REAL(MPI_Bsend)(p, n, MPI_PACKED, dest, tag, comm)
                                    : REAL(MPI_Send)(p, n, MPI_PACKED, dest, tag, comm);
    rt::release_device_buffer(op.device);
    return rc;
  }
  rc = mode == Mode::kSynchronous ? REAL(MPI_Issend)(p, n, MPI_PACKED, dest, tag, comm, request)
       : mode == Mode::kBuffered  ? REAL(MPI_Ibsend)(p, n, MPI_PACKED, dest, tag, comm, request)
                                  : REAL(MPI_Isend)(p, n, MPI_PACKED, dest, tag, comm, request);
  if (rc != MPI_SUCCESS) {
    rt::release_device_buffer(op.device);
    return rc;
  }
  rt::track(*request, std::move(op));
  return rc;
}

// A staged send by whichever method applies; `request` null: blocking.
int send_staged(Mode mode, const tp::UserBuffer& b, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (rt::on_gpu(b.info) && tp::mpi_takes_device_memory()) return send_device(mode, b, dest, tag, comm, request);
  const int dest_world = tp::world_rank_of(comm, dest);
  const tp::Method m = mode == Mode::kBuffered ? (b.bytes > tp::kOneShotLimit ? tp::Method::kStaged : tp::Method::kOneShot)
                                               : tp::choose_method(b, dest_world);
  if (tp::is_multi(m)) {
    DTMPI_TRACE("send: routed");
    int rc = tp::send_multi(b, m, dest, dest_world, tag, comm, mode == Mode::kSynchronous, request);
    return rc == MPI_SUCCESS ? rc : raise(comm, rc);
  }
  rt::Staging st;
  if (int rc = stage_send(b, m == tp::Method::kStaged, st, comm); rc != MPI_SUCCESS) return rc;
  DTMPI_TRACE("send: staged (one message)");
  const int n = static_cast<int>(b.bytes);
  int rc;
  if (!request) {
    rc = mode == Mode::kSynchronous ? REAL(MPI_Ssend)(st.ptr, n, MPI_PACKED, dest, tag, comm)
         : mode == Mode::kBuffered  ? REAL(MPI_Bsend)(st.ptr, n, MPI_PACKED, dest, tag, comm)
                                    : REAL(MPI_Send)(st.ptr, n, MPI_PACKED, dest, tag, comm);
    rt::release_staging(st);
    return rc;
  }
  rc = mode == Mode::kSynchronous ? REAL(MPI_Issend)(st.ptr, n, MPI_PACKED, dest, tag, comm, request)
       : mode == Mode::kBuffered  ? REAL(MPI_Ibsend)(st.ptr, n, MPI_PACKED, dest, tag, comm, request)
                                  : REAL(MPI_Isend)(st.ptr, n, MPI_PACKED, dest, tag, comm, request);
  if (rc != MPI_SUCCESS) {
    rt::release_staging(st);
    return rc;
  }
  rt::PendingOp op;  // a send keeps only its staging buffer until completion
  op.staging = st;
  rt::track(*request, std::move(op));
  return rc;
}

int recv_blocking(const RecvRoute& r, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (r.multi) {
    DTMPI_TRACE("MPI_Recv: routed");
    tp::ReceiveOp op(r.buffer, r.staged, comm);
    int rc = op.receive_blocking(source, tag);
    if (rc != MPI_SUCCESS) return raise(comm, rc);
    rc = tp::run(op, status);
    DTMPI_TRACE("MPI_Recv: done");
    if (rc != MPI_SUCCESS && !op.error_reported) raise(comm, rc);
    return rc;
  }
  return dtmpi::interpose::receive_one_message(r.buffer, comm, {source, tag}, status);
}

int recv_nonblocking(const RecvRoute& r, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  if (r.multi) {
    auto op = std::make_unique<tp::ReceiveOp>(r.buffer, r.staged, comm);
    int rc = op->post(source, tag);
    if (rc == MPI_SUCCESS) rc = tp::start_with_request(std::move(op), request);
    return rc == MPI_SUCCESS ? rc : raise(comm, rc);
  }
  return dtmpi::interpose::post_one_message(r.buffer, comm, {source, tag}, request);
}

}  // namespace

namespace dtmpi::interpose {

namespace {

// Prepares a single-message staged receive: the op to finish later.
// With a CUDA-aware system MPI the message lands in a pooled device buffer.
int begin_receive(const tp::UserBuffer& b, rt::PendingOp& op, MPI_Comm comm, void*& landing) {
  rt::count(rt::Counter::kStagedRecvs);
  if (rt::on_gpu(b.info) && tp::mpi_takes_device_memory()) {
    auto dev = rt::acquire_device_buffer(b.info.device, static_cast<size_t>(b.bytes));
    if (!dev) return raise(comm, MPI_ERR_NO_MEM);
    op.device = dev.value();
    landing = op.device.ptr;
  } else {
    auto st = rt::acquire_staging(static_cast<size_t>(b.bytes));
    if (!st) return raise(comm, MPI_ERR_NO_MEM);
    op.staging = st.value();
    landing = op.staging.ptr;
  }
  op.kind = rt::PendingOp::Kind::kRecv;
  op.plan = b.plan;
  op.count = b.count;
  op.user = b.ptr;
  op.user_info = b.info;
  op.via_device = b.bytes > tp::kOneShotLimit;
  return MPI_SUCCESS;
}

}  // namespace

int receive_one_message(const tp::UserBuffer& b, MPI_Comm comm, const Arrival& from, MPI_Status* status) {
  rt::PendingOp op;
  void* landing = nullptr;
  if (int rc = begin_receive(b, op, comm, landing); rc != MPI_SUCCESS) return rc;
  // the system MPI's status of the packed bytes is the application's: their
  // count gives its type the answers its own receive would (runtime/status.hpp)
  MPI_Status local = rt::seeded(status);
  const int n = static_cast<int>(b.bytes);
  int rc = from.message ? REAL(MPI_Mrecv)(landing, n, MPI_PACKED, from.message, &local)
                        : REAL(MPI_Recv)(landing, n, MPI_PACKED, from.source, from.tag, comm, &local);
  MPI_Status seen = local;
  seen.MPI_ERROR = rc;
  int urc = rc == MPI_SUCCESS ? rt::finish_receive(op, &seen) : MPI_SUCCESS;
  rt::release_staging(op.staging);
  rt::release_device_buffer(op.device);
  rt::give_back(local, status);
  if (urc != MPI_SUCCESS) return raise(comm, urc);
  return rc;
}

int post_one_message(const tp::UserBuffer& b, MPI_Comm comm, const Arrival& from, MPI_Request* request) {
  rt::PendingOp op;
  void* landing = nullptr;
  if (int rc = begin_receive(b, op, comm, landing); rc != MPI_SUCCESS) return rc;
  const int n = static_cast<int>(b.bytes);
  int rc = from.message ? REAL(MPI_Imrecv)(landing, n, MPI_PACKED, from.message, request)
                        : REAL(MPI_Irecv)(landing, n, MPI_PACKED, from.source, from.tag, comm, request);
  if (rc != MPI_SUCCESS) {
    rt::release_staging(op.staging);
    rt::release_device_buffer(op.device);
    return rc;
  }
  rt::track(*request, std::move(op));
  return rc;
}

// A receive that matches a message a probe took (transport/stash.hpp).
int recv_stashed(void* buf, int count, MPI_Datatype type, MPI_Comm comm, tp::Stashed& e, MPI_Status* status,
                 MPI_Request* request) {
  tp::UserBuffer b;
  if (!dtmpi::interpose::describe_receive(buf, count, type, b)) return raise(comm, MPI_ERR_TYPE);
  auto op = std::make_unique<tp::ReceiveOp>(b, false, comm);
  op->from_stash(e);
  if (request) {
    int rc = tp::start_with_request(std::move(op), request);
    return rc == MPI_SUCCESS ? rc : raise(comm, rc);
  }
  int rc = tp::run(*op, status);
  if (rc != MPI_SUCCESS && !op->error_reported) raise(comm, rc);
  return rc;
}

}  // namespace dtmpi::interpose

using dtmpi::interpose::recv_stashed;

#define DTMPI_BLOCKING_SEND(NAME, MODE)                                                                \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,          \
                        MPI_Comm comm) {                                                               \
    DTMPI_TRACE(#NAME ": entry");                                                                      \
    tp::poll();                                                                                        \
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
    tp::UserBuffer b;                                                                                  \
    if (must_stage(buf, count, datatype, b)) return send_staged(MODE, b, dest, tag, comm, request);    \
    if (b.refused) return refuse(comm, b);                                                             \
    return REAL(NAME)(buf, count, datatype, dest, tag, comm, request);                                 \
  }

// Ready mode is a hint an implementation may treat as standard mode.
DTMPI_BLOCKING_SEND(MPI_Send, Mode::kStandard)
DTMPI_BLOCKING_SEND(MPI_Rsend, Mode::kStandard)
DTMPI_BLOCKING_SEND(MPI_Ssend, Mode::kSynchronous)
DTMPI_BLOCKING_SEND(MPI_Bsend, Mode::kBuffered)
DTMPI_NONBLOCKING_SEND(MPI_Isend, Mode::kStandard)
DTMPI_NONBLOCKING_SEND(MPI_Irsend, Mode::kStandard)
DTMPI_NONBLOCKING_SEND(MPI_Issend, Mode::kSynchronous)
DTMPI_NONBLOCKING_SEND(MPI_Ibsend, Mode::kBuffered)

DTMPI_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                          MPI_Status* status) {
  DTMPI_TRACE("MPI_Recv: entry");
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag)) return recv_stashed(buf, count, datatype, comm, *e, status, nullptr);
  RecvRoute r;
  if (!route_receive(buf, count, datatype, r)) {
    if (r.buffer.refused) return refuse(comm, r.buffer);
    return REAL(MPI_Recv)(buf, count, datatype, source, tag, comm, status);
  }
  return recv_blocking(r, source, tag, comm, status);
}

namespace {

int irecv_from(int64_t multi_min, void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request* request) {
  DTMPI_TRACE("MPI_Irecv: entry");
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag))
      return recv_stashed(buf, count, datatype, comm, *e, MPI_STATUS_IGNORE, request);
  RecvRoute r;
  if (!route_receive(buf, count, datatype, r, multi_min)) {
    if (r.buffer.refused) return refuse(comm, r.buffer);
    return REAL(MPI_Irecv)(buf, count, datatype, source, tag, comm, request);
  }
  return recv_nonblocking(r, source, tag, comm, request);
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
  int rc = first ? PMPI_Recv(recvbuf, recvcount, recvtype, source, recvtag, comm, &sts[0])
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
    PMPI_Pack_size(count, datatype, comm, &size);
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
  return tp::iprobe(source, tag, comm, flag, status);
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
