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
#include <optional>
#include <unordered_map>

#include "base/footprint.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/status.hpp"
#include "transport/engine.hpp"
#include "transport/peers.hpp"
#include "transport/stash.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::raise;

namespace {

struct Matched {
  MPI_Comm comm = MPI_COMM_NULL;     // errors of the matched receive go to its handler
  std::unique_ptr<tp::Stashed> taken;  // dtmpi holds the message; the handle is a stand-in ...
  MPI_Request stand_in_send = MPI_REQUEST_NULL;  // ... whose send completes once it is received (MPICH)
};

struct Table {
  std::mutex mu;
  std::unordered_map<MPI_Message, Matched> messages;  // probed, not yet received
  MPI_Comm self = MPI_COMM_NULL;                      // where stand-ins come from
};
// never destroyed: MPI calls may still come from other static destructors
Table& table() {
  static Table* t = new Table;
  return *t;
}

// Per matched message the application has not received yet.
void report_footprint(std::vector<dtmpi::footprint::Part>& out) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  int64_t b = static_cast<int64_t>(t.messages.bucket_count() * sizeof(void*));
  for (const auto& [m, matched] : t.messages)
    b += static_cast<int64_t>(sizeof(std::pair<const MPI_Message, Matched>) + 2 * sizeof(void*)) +
         (matched.taken ? static_cast<int64_t>(sizeof(tp::Stashed) + matched.taken->raw.capacity()) : 0);
  out.push_back({"matched messages", "probed messages", b, 0});
}
[[maybe_unused]] const bool g_footprint_registered = dtmpi::footprint::add_source(report_footprint);

void remember(MPI_Message m, MPI_Comm comm, std::unique_ptr<tp::Stashed> taken,
              MPI_Request stand_in_send = MPI_REQUEST_NULL) {
  if (m == MPI_MESSAGE_NO_PROC || m == MPI_MESSAGE_NULL) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.messages[m] = Matched{comm, std::move(taken), stand_in_send};
}

std::optional<Matched> forget(MPI_Message m) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.messages.find(m);
  if (it == t.messages.end()) return std::nullopt;
  Matched out = std::move(it->second);
  t.messages.erase(it);
  return out;
}

// A message handle of dtmpi's own: zero bytes to itself, matched. The send
// stays in `send` until the stand-in is received (MPICH completes a send to
// itself only then).
int stand_in(MPI_Message* out, MPI_Request* send) {
  auto& t = table();
  MPI_Comm self;
  {
    std::lock_guard lock(t.mu);
    if (t.self == MPI_COMM_NULL)
      if (int rc = PMPI_Comm_dup(MPI_COMM_SELF, &t.self); rc != MPI_SUCCESS) return rc;
    self = t.self;
  }
  if (int rc = PMPI_Isend(nullptr, 0, MPI_BYTE, 0, 0, self, send); rc != MPI_SUCCESS) return rc;
  return PMPI_Mprobe(0, 0, self, out, MPI_STATUS_IGNORE);
}

// Receives a stand-in message and completes its send.
void retire(MPI_Message* message, Matched& m) {
  PMPI_Mrecv(nullptr, 0, MPI_BYTE, message, MPI_STATUS_IGNORE);  // sets MPI_MESSAGE_NULL
  PMPI_Wait(&m.stand_in_send, MPI_STATUS_IGNORE);
}

// Gives the application a message dtmpi holds; `seen`: the status of the
// system MPI's probe that took it just now (else null: an earlier probe did).
int hand_out(tp::Stashed e, int* flag, MPI_Message* message, MPI_Status* status, const MPI_Status* seen = nullptr) {
  const MPI_Comm comm = e.comm;
  if (seen)
    tp::probed_status_of(e, *seen, status);
  else
    tp::status_of(e, status, rt::ErrorWrites::kImprobe);
  MPI_Request send = MPI_REQUEST_NULL;
  if (int rc = stand_in(message, &send); rc != MPI_SUCCESS) return raise(comm, rc);
  remember(*message, comm, std::make_unique<tp::Stashed>(std::move(e)), send);
  *flag = 1;
  return MPI_SUCCESS;
}

}  // namespace

DTMPI_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                             MPI_Status* status) {
  if (!rt::active()) return REAL(MPI_Improbe)(source, tag, comm, flag, message, status);
  tp::poll();
  if (tp::stash_any())
    if (auto e = tp::stash_take(comm, source, tag)) return hand_out(std::move(*e), flag, message, status);
  MPI_Status st = rt::seeded(status);  // fields the probe leaves alone stay the application's
  int rc = REAL(MPI_Improbe)(source, tag, comm, flag, message, &st);
  if (rc != MPI_SUCCESS || !*flag) {
    rt::give_back(st, status);
    return rc;
  }
  if (*message != MPI_MESSAGE_NO_PROC) rt::observe_error_write(rt::ErrorWrites::kImprobe, st);
  MPI_Count bytes = 0;
  PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
  if (bytes == tp::kDescriptorBytes && tp::descriptors_possible() && *message != MPI_MESSAGE_NO_PROC) {
    tp::Stashed e;  // maybe a descriptor: read it now, report the real size
    if (rc = tp::read_matched(message, comm, st, e); rc != MPI_SUCCESS) return raise(comm, rc);
    return hand_out(std::move(e), flag, message, status, &st);
  }
  remember(*message, comm, nullptr);
  rt::give_back(st, status);
  return rc;
}

DTMPI_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!rt::active()) return REAL(MPI_Mprobe)(source, tag, comm, message, status);
  if (!tp::descriptors_possible() && !tp::stash_any() && !tp::busy()) {
    const int rc = REAL(MPI_Mprobe)(source, tag, comm, message, status);
    if (rc == MPI_SUCCESS) remember(*message, comm, nullptr);
    return rc;
  }
  for (;;) {  // polling, so that dtmpi's transfers progress meanwhile
    int flag = 0;
    const int rc = MPI_Improbe(source, tag, comm, &flag, message, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}

namespace {

// MPI_Mrecv (`request` null: blocking, `status` filled) and MPI_Imrecv.
int matched_receive(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status,
                    MPI_Request* request) {
  auto pass_through = [&] {
    return request ? REAL(MPI_Imrecv)(buf, count, type, message, request)
                   : REAL(MPI_Mrecv)(buf, count, type, message, status);
  };
  std::optional<Matched> m = rt::active() && message ? forget(*message) : std::nullopt;
  if (!m) return pass_through();
  tp::poll();
  if (m->taken) {
    retire(message, *m);
    return dtmpi::interpose::recv_stashed(buf, count, type, m->comm, *m->taken, request ? MPI_STATUS_IGNORE : status,
                                          request);
  }
  dtmpi::interpose::RecvRoute r;
  if (!dtmpi::interpose::route_receive(buf, count, type, r) || !r.staged) {
    if (r.buffer.refused) return dtmpi::interpose::refuse(m->comm, r.buffer);
    return pass_through();
  }
  const dtmpi::interpose::Arrival from{MPI_ANY_SOURCE, MPI_ANY_TAG, message};
  return request ? dtmpi::interpose::post_one_message(r.buffer, m->comm, from, request)
                 : dtmpi::interpose::receive_one_message(r.buffer, m->comm, from, status);
}

}  // namespace

DTMPI_EXPORT int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  return matched_receive(buf, count, type, message, status, nullptr);
}

DTMPI_EXPORT int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  return matched_receive(buf, count, type, message, MPI_STATUS_IGNORE, request);
}
