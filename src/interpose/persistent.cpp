// Persistent point-to-point requests through dtmpi (see persistent.hpp).
#include "interpose/persistent.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/footprint.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/stats.hpp"
#include "transport/engine.hpp"
#include "transport/peers.hpp"
#include "type/introspect.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::raise;

namespace dtmpi::interpose::persistent {

namespace {

enum class Kind { kSend, kSsend, kBsend, kRsend, kRecv };

struct Op {
  Kind kind = Kind::kSend;
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool own_type = false;  // a duplicate of the application's type, which it may free before this request
  int peer = 0, tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request inner = MPI_REQUEST_NULL;  // the running operation's request while active
  bool active = false;
};

struct Table {
  std::mutex mu;
  std::unordered_map<MPI_Request, std::unique_ptr<Op>> ops;  // by the application's handle
};
// never destroyed: MPI calls may still come from other static destructors
Table& table() {
  static Table* t = new Table;
  return *t;
}
std::atomic<int> g_ops{0}, g_active{0};

// Per persistent request of the application (Send_init/Recv_init).
void report_footprint(std::vector<dtmpi::footprint::Part>& out) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  const size_t node = sizeof(std::pair<const MPI_Request, std::unique_ptr<Op>>) + 2 * sizeof(void*) + sizeof(Op);
  out.push_back({"persistent requests", "requests",
                 static_cast<int64_t>(t.ops.size() * node + t.ops.bucket_count() * sizeof(void*)), 0});
}
[[maybe_unused]] const bool g_footprint_registered = dtmpi::footprint::add_source(report_footprint);

Op* find(MPI_Request h) {
  if (g_ops.load(std::memory_order_relaxed) == 0 || h == MPI_REQUEST_NULL) return nullptr;
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.ops.find(h);
  return it == t.ops.end() ? nullptr : it->second.get();
}

int create(Kind kind, const void* buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
           MPI_Request* request) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->buf = const_cast<void*>(buf);
  op->count = count;
  op->peer = peer;
  op->tag = tag;
  op->comm = comm;
  op->type = type;
  if (!dtmpi::type::is_predefined(type)) {
    // interposed: the duplicate shares the plan
    if (int rc = MPI_Type_dup(type, &op->type); rc != MPI_SUCCESS) return raise(comm, rc);
    op->own_type = true;
  }
  // the handle: a persistent request of the system MPI that is never started
  if (int rc = REAL(MPI_Send_init)(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, request);
      rc != MPI_SUCCESS) {
    if (op->own_type) MPI_Type_free(&op->type);
    return raise(comm, rc);
  }
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.ops[*request] = std::move(op);
  g_ops.fetch_add(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

int start(Op& op, MPI_Request* handle) {
  if (op.active) return raise(op.comm, MPI_ERR_REQUEST);  // started twice without completing
  MPI_Request inner = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (op.kind) {  // dtmpi's own entry points: routing, staging, progress
    case Kind::kSend: rc = MPI_Isend(op.buf, op.count, op.type, op.peer, op.tag, op.comm, &inner); break;
    case Kind::kSsend: rc = MPI_Issend(op.buf, op.count, op.type, op.peer, op.tag, op.comm, &inner); break;
    case Kind::kBsend: rc = MPI_Ibsend(op.buf, op.count, op.type, op.peer, op.tag, op.comm, &inner); break;
    case Kind::kRsend: rc = MPI_Irsend(op.buf, op.count, op.type, op.peer, op.tag, op.comm, &inner); break;
    case Kind::kRecv: rc = MPI_Irecv(op.buf, op.count, op.type, op.peer, op.tag, op.comm, &inner); break;
  }
  if (rc != MPI_SUCCESS) return rc;  // already raised on op.comm
  rt::count(rt::Counter::kPersistentStarts);
  if (inner == MPI_REQUEST_NULL) {
    // complete already (no implementation we know does this): the handle
    // itself, started, completes at once in the system MPI
    return REAL(MPI_Start)(handle);
  }
  {
    std::lock_guard lock(table().mu);
    op.inner = inner;
    op.active = true;
  }
  g_active.fetch_add(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

}  // namespace

bool any_active() { return g_active.load(std::memory_order_relaxed) != 0; }

HandleSwap::HandleSwap(MPI_Request* reqs, int n) : reqs_(reqs) {
  if (!any_active() || reqs == nullptr) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  for (int i = 0; i < n; ++i) {
    auto it = t.ops.find(reqs[i]);
    if (it == t.ops.end() || !it->second->active) continue;
    swapped_.push_back(i);
    handles_.push_back(reqs[i]);
    reqs[i] = it->second->inner;
  }
}

HandleSwap::~HandleSwap() {
  if (swapped_.empty()) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  for (size_t k = 0; k < swapped_.size(); ++k) {
    MPI_Request& slot = reqs_[swapped_[k]];
    auto it = t.ops.find(handles_[k]);
    if (it != t.ops.end()) {
      Op& op = *it->second;
      if (slot == MPI_REQUEST_NULL) {  // completed and freed by the call: the handle becomes inactive
        op.active = false;
        op.inner = MPI_REQUEST_NULL;
        g_active.fetch_sub(1, std::memory_order_relaxed);
      } else {
        op.inner = slot;
      }
    }
    slot = handles_[k];
  }
}

bool free_handle(MPI_Request* request, int& rc) {
  if (request == nullptr || g_ops.load(std::memory_order_relaxed) == 0) return false;
  std::unique_ptr<Op> op;
  {
    auto& t = table();
    std::lock_guard lock(t.mu);
    auto it = t.ops.find(*request);
    if (it == t.ops.end()) return false;
    op = std::move(it->second);
    t.ops.erase(it);
  }
  g_ops.fetch_sub(1, std::memory_order_relaxed);
  rc = MPI_SUCCESS;
  if (op->active) {
    // MPI: an active persistent request may be freed; its operation completes
    // on its own (dtmpi keeps and finishes what it tracks)
    g_active.fetch_sub(1, std::memory_order_relaxed);
    rc = MPI_Request_free(&op->inner);
  }
  const int frc = REAL(MPI_Request_free)(request);
  if (rc == MPI_SUCCESS) rc = frc;
  if (op->own_type) MPI_Type_free(&op->type);
  return true;
}

bool get_status(MPI_Request request, int* flag, MPI_Status* status, int& rc) {
  Op* op = find(request);
  if (op == nullptr || !op->active) return false;  // inactive: the system MPI answers for the handle
  rc = MPI_Request_get_status(op->inner, flag, status);
  return true;
}

}  // namespace dtmpi::interpose::persistent

namespace pst = dtmpi::interpose::persistent;
using pst::Kind;

// Sends dtmpi must stage (GPU memory, host layouts it packs better) are its own.
#define DTMPI_SEND_INIT(NAME, KIND)                                                                     \
  DTMPI_EXPORT int NAME(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, \
                        MPI_Request* request) {                                                          \
    tp::UserBuffer b;                                                                                    \
    if (!dtmpi::interpose::must_stage(buf, count, type, b)) {                                            \
      if (b.refused) return dtmpi::interpose::refuse(comm, b);                                           \
      return REAL(NAME)(buf, count, type, dest, tag, comm, request);                                     \
    }                                                                                                    \
    return pst::create(KIND, buf, count, type, dest, tag, comm, request);                                \
  }
DTMPI_SEND_INIT(MPI_Send_init, Kind::kSend)
DTMPI_SEND_INIT(MPI_Ssend_init, Kind::kSsend)
DTMPI_SEND_INIT(MPI_Bsend_init, Kind::kBsend)
DTMPI_SEND_INIT(MPI_Rsend_init, Kind::kRsend)

// Receives that dtmpi routes, or that may meet a descriptor or a message a
// probe took (possible in any job where descriptors are), are its own.
DTMPI_EXPORT int MPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                               MPI_Request* request) {
  dtmpi::interpose::RecvRoute r;
  if (!rt::active() || (!tp::descriptors_possible() && !dtmpi::interpose::route_receive(buf, count, type, r))) {
    if (r.buffer.refused) return dtmpi::interpose::refuse(comm, r.buffer);
    return REAL(MPI_Recv_init)(buf, count, type, source, tag, comm, request);
  }
  return pst::create(Kind::kRecv, buf, count, type, source, tag, comm, request);
}

DTMPI_EXPORT int MPI_Start(MPI_Request* request) {
  pst::Op* op = request ? pst::find(*request) : nullptr;
  if (op == nullptr) return REAL(MPI_Start)(request);
  return pst::start(*op, request);
}

DTMPI_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
  if (pst::g_ops.load(std::memory_order_relaxed) == 0) return REAL(MPI_Startall)(count, requests);
  for (int i = 0; i < count; ++i)
    if (int rc = MPI_Start(&requests[i]); rc != MPI_SUCCESS) return rc;
  return MPI_SUCCESS;
}

// Cancelling an active dtmpi persistent request cancels its operation.
DTMPI_EXPORT int MPI_Cancel(MPI_Request* request) {
  if (request != nullptr && pst::any_active())
    if (pst::Op* op = pst::find(*request); op != nullptr && op->active) return REAL(MPI_Cancel)(&op->inner);
  return REAL(MPI_Cancel)(request);
}
