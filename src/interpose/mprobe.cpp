// Matched probes and receives: MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv.
// A matched probe takes the message out of matching, so what it is must be
// decided at the probe: a message of exactly kDescriptorBytes may be a
// multi-message descriptor, and is read there (the status then reports the
// transfer's real size, as MPI_Probe does -- transport/stash.hpp); a message
// an earlier MPI_Probe took is handed out from the stash. dtmpi then holds the
// message, and the application gets a stand-in handle: a real matched message
// of its own (zero bytes to itself on a private communicator), which the
// matched receive recognizes and completes with dtmpi's message. Messages the
// system MPI still holds keep its handle; their matched receive into GPU
// memory (or a host layout dtmpi stages) lands the packed bytes and unpacks
// them, as MPI_Recv does.
#include <memory>
#include <mutex>

#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"
#include "runtime/status.hpp"
#include "transport/engine.hpp"
#include "transport/ledger.hpp"
#include "transport/matched.hpp"
#include "transport/peers.hpp"
#include "transport/stash.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::Error;
using dtmpi::Status;
using dtmpi::interpose::result;

namespace {

using Matched = tp::MatchedMessage;

// Where stand-ins come from: a duplicate of MPI_COMM_SELF, made at first use.
struct StandIns {
  std::mutex mu;
  MPI_Comm self = MPI_COMM_NULL;
};
// never destroyed: MPI calls may still come from other static destructors
StandIns& stand_ins() {
  static StandIns* t = new StandIns;
  return *t;
}

void remember(MPI_Message m, MPI_Comm comm, std::unique_ptr<tp::Stashed> taken,
              MPI_Request stand_in_send = MPI_REQUEST_NULL) {
  if (m == MPI_MESSAGE_NO_PROC || m == MPI_MESSAGE_NULL) return;
  auto e = std::make_shared<Matched>();
  e->comm = comm;
  e->taken = std::move(taken);
  e->stand_in_send = stand_in_send;
  tp::ledger::put_matched(m, std::move(e));
}

// A message handle of dtmpi's own: zero bytes to itself, matched. The send
// stays in `send` until the stand-in is received (MPICH completes a send to
// itself only then).
Status stand_in(MPI_Message* out, MPI_Request* send) {
  auto& t = stand_ins();
  MPI_Comm self;
  {
    std::lock_guard lock(t.mu);
    if (t.self == MPI_COMM_NULL) DTMPI_MPI_CHECK(REAL(MPI_Comm_dup)(MPI_COMM_SELF, &t.self));
    self = t.self;
  }
  DTMPI_MPI_CHECK(REAL(MPI_Isend)(nullptr, 0, MPI_BYTE, 0, 0, self, send));
  DTMPI_MPI_CHECK(REAL(MPI_Mprobe)(0, 0, self, out, MPI_STATUS_IGNORE));
  return dtmpi::ok_status();
}

// Receives a stand-in message and completes its send.
void retire(MPI_Message* message, Matched& m) {
  REAL(MPI_Mrecv)(nullptr, 0, MPI_BYTE, message, MPI_STATUS_IGNORE);  // sets MPI_MESSAGE_NULL
  REAL(MPI_Wait)(&m.stand_in_send, MPI_STATUS_IGNORE);
}

// Gives the application a message dtmpi holds; `seen`: the status of the
// system MPI's probe that took it just now (else null: an earlier probe did).
Status hand_out(tp::Stashed e, int* flag, MPI_Message* message, MPI_Status* status, const MPI_Status* seen = nullptr) {
  const MPI_Comm comm = e.comm;
  if (seen)
    tp::probed_status_of(e, *seen, status);
  else
    tp::status_of(e, status, rt::ErrorWrites::kImprobe);
  MPI_Request send = MPI_REQUEST_NULL;
  DTMPI_TRY(stand_in(message, &send));
  remember(*message, comm, std::make_unique<tp::Stashed>(std::move(e)), send);
  *flag = 1;
  return dtmpi::ok_status();
}

// MPI_Improbe (for MPI_Mprobe too).
Status improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  if (!rt::active()) return DTMPI_MPI_FORWARD(REAL(MPI_Improbe)(source, tag, comm, flag, message, status));
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag)) return hand_out(std::move(*e), flag, message, status);
  MPI_Status st = rt::seeded(status);  // fields the probe leaves alone stay the application's
  Status probed = DTMPI_MPI_FORWARD(REAL(MPI_Improbe)(source, tag, comm, flag, message, &st));
  if (!probed || !*flag) {
    rt::give_back(st, status);
    return probed;
  }
  if (*message != MPI_MESSAGE_NO_PROC) rt::observe_error_write(rt::ErrorWrites::kImprobe, st);
  MPI_Count bytes = 0;
  REAL(MPI_Get_elements_x)(&st, MPI_BYTE, &bytes);
  if (bytes == tp::kDescriptorBytes && tp::descriptors_possible() && *message != MPI_MESSAGE_NO_PROC) {
    tp::Stashed e;  // maybe a descriptor: read it now, report the real size
    DTMPI_TRY(tp::read_matched(message, comm, st, e));
    return hand_out(std::move(e), flag, message, status, &st);
  }
  remember(*message, comm, nullptr);
  rt::give_back(st, status);
  return probed;
}

}  // namespace

DTMPI_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  return result(comm, improbe(source, tag, comm, flag, message, status));
}

DTMPI_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!rt::active()) return REAL(MPI_Mprobe)(source, tag, comm, message, status);
  if (!tp::descriptors_possible() && !tp::stash_any() && !tp::busy()) {
    Status probed = DTMPI_MPI_FORWARD(REAL(MPI_Mprobe)(source, tag, comm, message, status));
    if (probed) remember(*message, comm, nullptr);
    return result(comm, probed);
  }
  for (;;) {  // polling, so that dtmpi's transfers progress meanwhile
    int flag = 0;
    Status probed = improbe(source, tag, comm, &flag, message, status);
    if (!probed || flag) return result(comm, probed);
  }
}

namespace {

// MPI_Mrecv (`request` null: blocking, `status` filled) and MPI_Imrecv, on
// the communicator of the message (`comm`: its probe's, once known).
Status matched_receive(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status,
                       MPI_Request* request, MPI_Comm& comm) {
  auto pass_through = [&] {
    return DTMPI_MPI_FORWARD(request ? REAL(MPI_Imrecv)(buf, count, type, message, request)
                                     : REAL(MPI_Mrecv)(buf, count, type, message, status));
  };
  std::shared_ptr<Matched> m = rt::active() && message ? tp::ledger::take_matched(*message) : nullptr;
  if (!m) return pass_through();
  comm = m->comm;
  tp::poll();
  if (m->taken) {
    retire(message, *m);
    return dtmpi::interpose::recv_stashed(buf, count, type, m->comm, *m->taken, request ? MPI_STATUS_IGNORE : status,
                                          request);
  }
  dtmpi::interpose::RecvRoute r;
  if (!dtmpi::interpose::route_receive(buf, count, type, r) || !r.staged) {
    if (r.buffer.refused) return dtmpi::interpose::refusal(r.buffer);
    return pass_through();
  }
  const tp::Arrival from{MPI_ANY_SOURCE, MPI_ANY_TAG, message};
  return tp::receive(r, m->comm, from, status, request);
}

}  // namespace

// A message dtmpi does not know goes to the system MPI, which reports its
// errors itself (its communicator is the system MPI's to know).
DTMPI_EXPORT int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  MPI_Comm comm = MPI_COMM_WORLD;
  Status received = matched_receive(buf, count, type, message, status, nullptr, comm);
  return result(comm, received);
}

DTMPI_EXPORT int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  MPI_Comm comm = MPI_COMM_WORLD;
  Status received = matched_receive(buf, count, type, message, MPI_STATUS_IGNORE, request, comm);
  return result(comm, received);
}
