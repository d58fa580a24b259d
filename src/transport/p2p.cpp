// The one-message protocol and the dispatch to the multi-message one.
#include "transport/p2p.hpp"

#include <memory>
#include <string>

#include "base/log.hpp"
#include "base/trace.hpp"
#include "base/system_mpi.hpp"
#include "runtime/stats.hpp"
#include "runtime/stream_pack.hpp"
#include "runtime/status.hpp"
#include "transport/ledger.hpp"
#include "transport/peers.hpp"
#include "transport/staging.hpp"

namespace dtmpi::transport {

namespace rt = dtmpi::runtime;

namespace {

// The system MPI's send of `n` packed bytes in `mode` on the application's
// communicator (which reports its errors); `request` null: blocking.
Status system_send(SendMode mode, const void* p, int n, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  int rc;
  if (!request)
    rc = mode == SendMode::kSynchronous ? REAL(MPI_Ssend)(p, n, MPI_PACKED, dest, tag, comm)
         : mode == SendMode::kBuffered  ? REAL(MPI_Bsend)(p, n, MPI_PACKED, dest, tag, comm)
                                        : REAL(MPI_Send)(p, n, MPI_PACKED, dest, tag, comm);
  else
    rc = mode == SendMode::kSynchronous ? REAL(MPI_Issend)(p, n, MPI_PACKED, dest, tag, comm, request)
         : mode == SendMode::kBuffered  ? REAL(MPI_Ibsend)(p, n, MPI_PACKED, dest, tag, comm, request)
                                        : REAL(MPI_Isend)(p, n, MPI_PACKED, dest, tag, comm, request);
  return mpi_status(rc, "the system MPI's send of packed bytes", true);
}

Error pack_failed(const Error& e) { return Error{MPI_ERR_OTHER, "packing a GPU send buffer failed: " + e.what}; }

// A send through a CUDA-aware system MPI: the packed device buffer.
Status send_device(SendMode mode, const UserBuffer& b, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  auto dev = rt::pack_to_device_buffer(*b.plan, b.count, b.ptr, b.info);
  if (!dev) return pack_failed(dev.error());
  PendingOp op;
  op.device = dev.value();
  rt::count(rt::Counter::kDeviceSends);
  Status sent = system_send(mode, op.device.ptr, static_cast<int>(b.bytes), dest, tag, comm, request);
  if (!request || !sent) {
    rt::release_device_buffer(op.device);
    return sent;
  }
  ledger::track(*request, std::move(op));
  return ok_status();
}

// A one-message send: packed into a new staging buffer, handed to the system MPI.
Status send_one_message(SendMode mode, const UserBuffer& b, Method m, int dest, int tag, MPI_Comm comm,
                        MPI_Request* request) {
  DTMPI_TRACE("send: one message");
  auto acquired = rt::acquire_staging(static_cast<size_t>(b.bytes));
  if (!acquired) return Error{MPI_ERR_NO_MEM, "no staging buffer for a send: " + acquired.error().what};
  rt::Staging st = acquired.value();
  DTMPI_TRACE("send: staging acquired");
  rt::count(rt::Counter::kStagedSends);
  if (auto packed = stage_out(*b.plan, b.count, b.ptr, b.info, st, m == Method::kStaged); !packed) {
    rt::release_staging(st);
    return pack_failed(packed.error());
  }
  DTMPI_TRACE("send: staged (one message)");
  Status sent = system_send(mode, st.ptr, static_cast<int>(b.bytes), dest, tag, comm, request);
  if (!request || !sent) {
    rt::release_staging(st);
    return sent;
  }
  PendingOp op;  // a send keeps only its staging buffer until completion
  op.staging = st;
  ledger::track(*request, std::move(op));
  return ok_status();
}

// Prepares a one-message staged receive: the op to finish later and where the
// bytes land. With a CUDA-aware system MPI they land in a pooled device buffer.
Status begin_receive(const UserBuffer& b, PendingOp& op, void*& landing) {
  rt::count(rt::Counter::kStagedRecvs);
  if (rt::on_gpu(b.info) && mpi_takes_device_memory()) {
    auto dev = rt::acquire_device_buffer(b.info.device, static_cast<size_t>(b.bytes));
    if (!dev) return Error{MPI_ERR_NO_MEM, "no device buffer for a receive: " + dev.error().what};
    op.device = dev.value();
    landing = op.device.ptr;
  } else {
    auto st = rt::acquire_staging(static_cast<size_t>(b.bytes));
    if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a receive: " + st.error().what};
    op.staging = st.value();
    landing = op.staging.ptr;
  }
  op.kind = PendingOp::Kind::kRecv;
  op.plan = b.plan;
  op.count = b.count;
  op.user = b.ptr;
  op.user_info = b.info;
  op.via_device = b.bytes > kOneShotLimit;
  return ok_status();
}

void release(PendingOp& op) {
  rt::release_staging(op.staging);
  rt::release_device_buffer(op.device);
}

Status receive_one_message(const UserBuffer& b, MPI_Comm comm, const Arrival& from, MPI_Status* status) {
  PendingOp op;
  void* landing = nullptr;
  DTMPI_TRY(begin_receive(b, op, landing));
  // the system MPI's status of the packed bytes is the application's: their
  // count gives its type the answers its own receive would (runtime/status.hpp)
  MPI_Status local = rt::seeded(status);
  const int n = static_cast<int>(b.bytes);
  const int rc = from.message ? REAL(MPI_Mrecv)(landing, n, MPI_PACKED, from.message, &local)
                              : REAL(MPI_Recv)(landing, n, MPI_PACKED, from.source, from.tag, comm, &local);
  MPI_Status seen = local;
  seen.MPI_ERROR = rc;
  const Status received = mpi_status(rc, "", true);  // comm's handler already ran
  Status unpacked = received ? finish_receive(op, &seen) : ok_status();
  release(op);
  rt::give_back(local, status);
  DTMPI_TRY(received);
  return unpacked;
}

Status post_one_message(const UserBuffer& b, MPI_Comm comm, const Arrival& from, MPI_Request* request) {
  PendingOp op;
  void* landing = nullptr;
  DTMPI_TRY(begin_receive(b, op, landing));
  const int n = static_cast<int>(b.bytes);
  Status posted = from.message ? mpi_status(REAL(MPI_Imrecv)(landing, n, MPI_PACKED, from.message, request), "", true)
                               : mpi_status(REAL(MPI_Irecv)(landing, n, MPI_PACKED, from.source, from.tag, comm, request),
                                            "", true);
  if (!posted) {
    release(op);
    return posted;
  }
  ledger::track(*request, std::move(op));
  return ok_status();
}

// A ReceiveOp driven to its end (blocking) or handed to the engine behind the
// application's request.
Status run_or_start(std::unique_ptr<ReceiveOp> op, MPI_Status* status, MPI_Request* request) {
  if (request) return start_with_request(std::move(op), request);
  return run(*op, status);
}

}  // namespace

Status send(SendMode mode, const UserBuffer& b, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (rt::on_gpu(b.info) && mpi_takes_device_memory()) return send_device(mode, b, dest, tag, comm, request);
  const int dest_world = world_rank_of(comm, dest);
  const Method m = mode == SendMode::kBuffered ? (b.bytes > kOneShotLimit ? Method::kStaged : Method::kOneShot)
                                               : choose_method(b, dest_world);
  if (!is_multi(m)) return send_one_message(mode, b, m, dest, tag, comm, request);
  DTMPI_TRACE("send: routed");
  return send_multi(b, m, dest, dest_world, tag, comm, mode == SendMode::kSynchronous, request);
}

Status receive(const RecvRoute& r, MPI_Comm comm, const Arrival& from, MPI_Status* status, MPI_Request* request) {
  if (!r.multi || from.message)  // a matched message is one message (interpose/mprobe.cpp)
    return request ? post_one_message(r.buffer, comm, from, request)
                   : receive_one_message(r.buffer, comm, from, status);
  DTMPI_TRACE("receive: routed");
  auto op = std::make_unique<ReceiveOp>(r.buffer, r.staged, comm);
  DTMPI_TRY(request ? op->post(from.source, from.tag) : op->receive_blocking(from.source, from.tag));
  return run_or_start(std::move(op), status, request);
}

Status receive_stashed(const UserBuffer& b, MPI_Comm comm, Stashed& e, MPI_Status* status, MPI_Request* request) {
  auto op = std::make_unique<ReceiveOp>(b, false, comm);
  op->from_stash(e);
  return run_or_start(std::move(op), status, request);
}

}  // namespace dtmpi::transport
