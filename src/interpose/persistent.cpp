// Persistent point-to-point requests: the MPI signatures and the decision
// whether dtmpi serves one (transport/persistent.hpp runs them).
#include <memory>

#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"
#include "transport/ledger.hpp"
#include "transport/peers.hpp"
#include "transport/persistent.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::refusal;
using dtmpi::interpose::result;

namespace {

std::shared_ptr<tp::PersistentRequest> request_of(const void* buf, int count, MPI_Datatype type, int peer, int tag,
                                                  MPI_Comm comm) {
  auto p = std::make_shared<tp::PersistentRequest>();
  p->buf = const_cast<void*>(buf);
  p->count = count;
  p->type = type;
  p->peer = peer;
  p->tag = tag;
  p->comm = comm;
  return p;
}

dtmpi::Status send_init(tp::SendMode mode, const tp::UserBuffer& b, const void* buf, int count, MPI_Datatype type,
                        int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  auto p = request_of(buf, count, type, dest, tag, comm);
  p->is_send = true;
  p->mode = mode;
  p->send_buffer = b;
  return tp::persistent::create(std::move(p), request);
}

}  // namespace

// Sends dtmpi must stage (GPU memory, host layouts it packs better) are its
// own. Ready mode is a hint an implementation may treat as standard mode.
#define DTMPI_SEND_INIT(NAME, MODE)                                                                      \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, \
                        MPI_Request* request) {                                                          \
    tp::UserBuffer b;                                                                                    \
    if (!dtmpi::interpose::must_stage(buf, count, type, b)) {                                            \
      if (b.refused) return result(comm, refusal(b));                                                    \
      return REAL(NAME)(buf, count, type, dest, tag, comm, request);                                     \
    }                                                                                                    \
    return result(comm, send_init(MODE, b, buf, count, type, dest, tag, comm, request));                 \
  }
DTMPI_SEND_INIT(MPI_Send_init, tp::SendMode::kStandard)
DTMPI_SEND_INIT(MPI_Ssend_init, tp::SendMode::kSynchronous)
DTMPI_SEND_INIT(MPI_Bsend_init, tp::SendMode::kBuffered)
DTMPI_SEND_INIT(MPI_Rsend_init, tp::SendMode::kStandard)

// Receives that dtmpi routes, or that may meet a descriptor or a message a
// probe took (possible in any job where descriptors are), are its own.
DTMPI_EXPORT int MPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                               MPI_Request* request) {
  auto p = request_of(buf, count, type, source, tag, comm);
  p->is_send = false;
  p->routed = rt::active() && dtmpi::interpose::route_receive(buf, count, type, p->route);
  if (p->route.buffer.refused) return result(comm, refusal(p->route.buffer));
  if (!rt::active() || (!tp::descriptors_possible() && !p->routed))
    return REAL(MPI_Recv_init)(buf, count, type, source, tag, comm, request);
  p->describable = dtmpi::interpose::describe_receive(buf, count, type, p->stash_buffer);
  return result(comm, tp::persistent::create(std::move(p), request));
}

DTMPI_EXPORT int MPI_Start(MPI_Request* request) {
  auto p = request && tp::ledger::any_persistent() ? tp::ledger::find_persistent(*request) : nullptr;
  if (!p) return REAL(MPI_Start)(request);
  return result(p->comm, tp::persistent::start(*p, request));
}

// Each request as MPI_Start starts it; the first that fails ends the call
// with its error, raised on its own communicator.
DTMPI_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
  if (!tp::ledger::any_persistent()) return REAL(MPI_Startall)(count, requests);
  for (int i = 0; i < count; ++i) {
    auto p = tp::ledger::find_persistent(requests[i]);
    if (!p) {
      if (dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Start)(&requests[i])); !s) return result(s);
      continue;
    }
    if (dtmpi::Status s = tp::persistent::start(*p, &requests[i]); !s) return result(p->comm, s);
  }
  return MPI_SUCCESS;
}

// Cancelling an active dtmpi persistent request cancels its operation.
DTMPI_EXPORT int MPI_Cancel(MPI_Request* request) {
  if (dtmpi::Status s = dtmpi::ok_status(); request != nullptr && tp::persistent::cancel(*request, s)) return result(s);
  return REAL(MPI_Cancel)(request);
}
