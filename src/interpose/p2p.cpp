// Point-to-point entry points: the MPI signatures and the decision whether
// dtmpi serves a call (interpose/p2p_route.hpp). Host-memory traffic of
// predefined types is a pass-through: a memo lookup and the address check in
// front of the system MPI, without a stack frame (fast_path below; plus, for
// receives of at least transport::kMultiMin bytes in a job that uses GPUs, a
// look at whether what arrived is a multi-message descriptor).
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

using dtmpi::interpose::Asked;
using tp::SendMode;

// The exported point-to-point calls' fast path: nothing due before the
// decision (no trace point, no progress: the engine is idle), and a
// predefined type on host memory that plain_host_no_call answers from plain
// data. Then the call jumps to the system MPI without a stack frame of its
// own; everything else goes to a separate function with the same arguments
// (a tail call), which traces, polls and decides once, handing what it
// learned on (interpose::Asked). The one thing asked twice there is the type
// memo, ~10 instructions: passing it would take a 7th argument, and a call
// with arguments on the stack cannot be a jump (issue 29).
[[gnu::always_inline]] inline bool fast_path(const void* buf, int count, MPI_Datatype type, int64_t max_bytes) {
  return !dtmpi::trace::g_enabled.load(std::memory_order_relaxed) && !tp::busy() &&
         dtmpi::interpose::plain_host_no_call(buf, count, type, max_bytes);
}

// A send in `mode` (`request` null: blocking): dtmpi's transport for a
// buffer it stages, else `forward()`, the system MPI's call of the same name.
// The caller polled; `asked` as must_stage takes it.
template <class Forward>
Status send(SendMode mode, const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
            MPI_Request* request, const Asked* asked, Forward forward) {
  tp::UserBuffer b;
  if (must_stage(buf, count, datatype, b, dtmpi::interpose::HostPacking::kWhereBetter, asked))
    return tp::send(mode, b, dest, tag, comm, request);
  if (b.refused) return refusal(b);
  return DTMPI_MPI_FORWARD(forward());
}

// A blocking send while dtmpi's windows need this rank's progress
// (blocking_needs_progress): the non-blocking form (`start(request)`: the
// system MPI's), then dtmpi's wait.
template <class Start>
Status send_progressing(SendMode mode, const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, Start start) {
  MPI_Request r = MPI_REQUEST_NULL;
  DTMPI_TRY(send(mode, buf, count, datatype, dest, tag, comm, &r, nullptr, [&] { return start(&r); }));
  return dtmpi::interpose::wait(&r, MPI_STATUS_IGNORE);
}

}  // namespace

// The send entry points: the fast path, else NAME##_rest (noinline: inlined,
// its frame would be the fast path's too).
#define DTMPI_SEND_ENTRY(NAME, MODE, REQUEST, PROGRESSING, PARAMS, ...)                                    \
  namespace {                                                                                              \
  [[gnu::noinline]] int NAME##_rest(PARAMS) {                                                              \
    DTMPI_TRACE(#NAME ": entry");                                                                          \
    tp::poll();                                                                                            \
    PROGRESSING                                                                                            \
    Asked asked;                                                                                           \
    if (plain_host(buf, count, datatype, INT64_MAX, asked)) return REAL(NAME)(__VA_ARGS__);                \
    return result(comm, send(MODE, buf, count, datatype, dest, tag, comm, REQUEST, &asked,                \
                             [&] { return REAL(NAME)(__VA_ARGS__); }));                                    \
  }                                                                                                        \
  }                                                                                                        \
  DTMPI_EXPORT int NAME(PARAMS) {                                                                          \
    if (__builtin_expect(fast_path(buf, count, datatype, INT64_MAX), 1))                                   \
      if (const auto real = ::dtmpi::base::g_real.NAME) return real(__VA_ARGS__); /* null: not resolved */ \
    return NAME##_rest(__VA_ARGS__);                                                                       \
  }
#define DTMPI_SEND_PARAMS const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm
#define DTMPI_ISEND_PARAMS DTMPI_SEND_PARAMS, MPI_Request *request
// (a blocking send while dtmpi's windows need progress: its non-blocking form INAME)
#define DTMPI_BLOCKING_SEND(NAME, MODE, INAME)                                                               \
  DTMPI_SEND_ENTRY(                                                                                          \
      NAME, MODE, nullptr,                                                                                   \
      if (dtmpi::interpose::blocking_needs_progress()) return result(                                        \
          comm, send_progressing(MODE, buf, count, datatype, dest, tag, comm,                                \
                                 [&](MPI_Request* r) { return REAL(INAME)(buf, count, datatype, dest, tag, comm, r); }));, \
      DTMPI_SEND_PARAMS, buf, count, datatype, dest, tag, comm)
#define DTMPI_NONBLOCKING_SEND(NAME, MODE) \
  DTMPI_SEND_ENTRY(NAME, MODE, request, , DTMPI_ISEND_PARAMS, buf, count, datatype, dest, tag, comm, request)

// Ready mode is a hint an implementation may treat as standard mode.
DTMPI_BLOCKING_SEND(MPI_Send, SendMode::kStandard, MPI_Isend)
DTMPI_BLOCKING_SEND(MPI_Rsend, SendMode::kStandard, MPI_Irsend)
DTMPI_BLOCKING_SEND(MPI_Ssend, SendMode::kSynchronous, MPI_Issend)
DTMPI_BLOCKING_SEND(MPI_Bsend, SendMode::kBuffered, MPI_Ibsend)
DTMPI_NONBLOCKING_SEND(MPI_Isend, SendMode::kStandard)
DTMPI_NONBLOCKING_SEND(MPI_Irsend, SendMode::kStandard)
DTMPI_NONBLOCKING_SEND(MPI_Issend, SendMode::kSynchronous)
DTMPI_NONBLOCKING_SEND(MPI_Ibsend, SendMode::kBuffered)

namespace dtmpi::interpose {

Status isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  DTMPI_TRACE("isend: entry");
  tp::poll();
  return send(SendMode::kStandard, buf, count, type, dest, tag, comm, request, nullptr,
              [&] { return REAL(MPI_Isend)(buf, count, type, dest, tag, comm, request); });
}

namespace {

// MPI_Recv and MPI_Irecv (`request` null: blocking) after the poll: a
// message a probe took, dtmpi's transport, or the system MPI's call. `asked`
// as route_receive takes it.
Status receive(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status,
               MPI_Request* request, int64_t multi_min, const Asked* asked) {
  if (!request && dtmpi::interpose::blocking_needs_progress()) {
    // the non-blocking form and dtmpi's wait (p2p_route.hpp); MPI_ERROR is
    // left as a blocking receive leaves it
    MPI_Request r = MPI_REQUEST_NULL;
    DTMPI_TRY(receive(buf, count, type, source, tag, comm, MPI_STATUS_IGNORE, &r, multi_min, asked));
    const int error_field = status != MPI_STATUS_IGNORE ? status->MPI_ERROR : MPI_SUCCESS;
    Status s = dtmpi::interpose::wait(&r, status);
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = error_field;
    return s;
  }
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag)) return recv_stashed(buf, count, type, comm, *e, status, request);
  RecvRoute r;
  if (!route_receive(buf, count, type, r, multi_min, asked)) {
    if (r.buffer.refused) return refusal(r.buffer);
    return DTMPI_MPI_FORWARD(request ? REAL(MPI_Irecv)(buf, count, type, source, tag, comm, request)
                                     : REAL(MPI_Recv)(buf, count, type, source, tag, comm, status));
  }
  return tp::receive(r, comm, tp::Arrival{source, tag, nullptr}, status, request);
}

}  // namespace

Status recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  DTMPI_TRACE("MPI_Recv: entry");
  tp::poll();
  return receive(buf, count, type, source, tag, comm, status, nullptr, tp::kMultiMin, nullptr);
}

Status irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request,
             int64_t multi_min) {
  DTMPI_TRACE("MPI_Irecv: entry");
  tp::poll();
  return receive(buf, count, type, source, tag, comm, MPI_STATUS_IGNORE, request, multi_min, nullptr);
}

// Probes see a multi-message transfer with its real size (transport/stash.hpp).
Status iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  tp::poll();
  if (!tp::descriptors_possible() && !tp::stash_any())
    return DTMPI_MPI_FORWARD(REAL(MPI_Iprobe)(source, tag, comm, flag, status));
  return tp::iprobe(source, tag, comm, flag, status);
}

}  // namespace dtmpi::interpose

namespace {

// MPI_Recv and MPI_Irecv past the fast path (`request` null: blocking):
// the trace point, the poll, a message a probe took, then plain_host once and
// route_receive with what it learned.
int receive_rest(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status,
                 MPI_Request* request) {
  DTMPI_TRACE(request ? "MPI_Irecv: entry" : "MPI_Recv: entry");
  tp::poll();
  // a message a probe took may be this one: receive() looks, and decides all
  const bool stashed = tp::stash_any();
  Asked asked;
  if (!stashed && plain_host(buf, count, type, tp::kMultiMin, asked) &&
      (request || !dtmpi::interpose::blocking_needs_progress()))
    return request ? REAL(MPI_Irecv)(buf, count, type, source, tag, comm, request)
                   : REAL(MPI_Recv)(buf, count, type, source, tag, comm, status);
  return result(comm, dtmpi::interpose::receive(buf, count, type, source, tag, comm, status, request, tp::kMultiMin,
                                                stashed ? nullptr : &asked));
}
// One per signature, so that the fast paths reach them by a jump.
[[gnu::noinline]] int recv_rest(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                                MPI_Status* status) {
  return receive_rest(buf, count, type, source, tag, comm, status, nullptr);
}
[[gnu::noinline]] int irecv_rest(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                                 MPI_Request* request) {
  return receive_rest(buf, count, type, source, tag, comm, MPI_STATUS_IGNORE, request);
}

// The commonest receive, decided inline: the fast path above, no message
// taken by a probe, below any descriptor's size. `last`: MPI_Recv's status
// or MPI_Irecv's request, as kReal (the system MPI's) and kRest take it.
template <auto kReal, auto kRest, class Last>
[[gnu::always_inline]] inline int receive_entry(void* buf, int count, MPI_Datatype type, int source, int tag,
                                                MPI_Comm comm, Last last) {
  // (the system MPI's function read last: one register less while deciding,
  // one push and pop instead of three)
  if (__builtin_expect(!tp::stash_any() && fast_path(buf, count, type, tp::kMultiMin), 1))
    if (const auto real = dtmpi::base::g_real.*kReal) return real(buf, count, type, source, tag, comm, last);
  return kRest(buf, count, type, source, tag, comm, last);
}
}  // namespace

DTMPI_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                          MPI_Status* status) {
  return receive_entry<&dtmpi::base::RealMpi::MPI_Recv, recv_rest>(buf, count, datatype, source, tag, comm, status);
}

DTMPI_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                           MPI_Request* request) {
  return receive_entry<&dtmpi::base::RealMpi::MPI_Irecv, irecv_rest>(buf, count, datatype, source, tag, comm,
                                                                      request);
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
  if (!stage_s && !stage_r && !dtmpi::interpose::blocking_needs_progress())
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
  if (!staged && !route_receive(buf, count, datatype, r) && !dtmpi::interpose::blocking_needs_progress())
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
