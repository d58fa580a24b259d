// Persistent point-to-point requests through dtmpi (see persistent.hpp).
#include "transport/persistent.hpp"

#include <atomic>
#include <memory>

#include "base/system_mpi.hpp"
#include "runtime/stats.hpp"
#include "transport/engine.hpp"
#include "transport/ledger.hpp"
#include "type/introspect.hpp"
#include "type/registry.hpp"

namespace dtmpi::transport::persistent {

namespace rt = dtmpi::runtime;

namespace {

std::atomic<int> g_active{0};

void set_active(PersistentRequest& p, MPI_Request inner) {
  p.inner = inner;
  p.active = true;
  g_active.fetch_add(1, std::memory_order_relaxed);
  ledger::add_work();
}

void set_inactive(PersistentRequest& p) {
  p.active = false;
  p.inner = MPI_REQUEST_NULL;
  g_active.fetch_sub(1, std::memory_order_relaxed);
  ledger::remove_work();
}

// Frees the duplicate of the application's type (its plan first: the handle
// may be reused at once, see interpose/type.cpp).
void free_own_type(PersistentRequest& p) {
  if (!p.own_type) return;
  type::forget_plan(p.type);
  REAL(MPI_Type_free)(&p.type);
  p.own_type = false;
}

Status start_receive(PersistentRequest& p, MPI_Request* inner) {
  if (stash_any())
    if (auto e = stash_take(p.comm, p.peer, p.tag)) {
      if (!p.describable) return Error{MPI_ERR_TYPE, "a probed message for a receive whose type dtmpi cannot size"};
      return receive_stashed(p.stash_buffer, p.comm, *e, MPI_STATUS_IGNORE, inner);
    }
  if (p.routed) return receive(p.route, p.comm, Arrival{p.peer, p.tag, nullptr}, MPI_STATUS_IGNORE, inner);
  return mpi_status(REAL(MPI_Irecv)(p.buf, p.count, p.type, p.peer, p.tag, p.comm, inner), "", true);
}

}  // namespace

Status create(std::shared_ptr<PersistentRequest> p, MPI_Request* request) {
  if (!type::is_predefined(p->type)) {
    // the application may free its type before this request: a duplicate
    // that shares the plan
    const MPI_Datatype user = p->type;
    DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Type_dup)(user, &p->type));
    type::share_plan(user, p->type);
    p->own_type = true;
    p->send_buffer.type = p->route.buffer.type = p->stash_buffer.type = p->type;
  }
  // the handle: a persistent request of the system MPI that is never started
  if (Status handle = DTMPI_MPI_STATUS(REAL(MPI_Send_init)(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, request));
      !handle) {
    free_own_type(*p);
    return handle;
  }
  ledger::put_persistent(*request, std::move(p));
  return ok_status();
}

Status start(PersistentRequest& p, MPI_Request* handle) {
  if (p.active) return Error{MPI_ERR_REQUEST, ""};  // started twice without completing
  poll();
  MPI_Request inner = MPI_REQUEST_NULL;
  DTMPI_TRY(p.is_send ? send(p.mode, p.send_buffer, p.peer, p.tag, p.comm, &inner) : start_receive(p, &inner));
  rt::count(rt::Counter::kPersistentStarts);
  if (inner == MPI_REQUEST_NULL) {
    // complete already (no implementation we know does this): the handle
    // itself, started, completes at once in the system MPI
    return mpi_status(REAL(MPI_Start)(handle), "", true);
  }
  set_active(p, inner);
  return ok_status();
}

bool any_active() { return g_active.load(std::memory_order_relaxed) != 0; }

HandleSwap::HandleSwap(MPI_Request* reqs, int n) : reqs_(reqs) {
  if (!any_active() || reqs == nullptr) return;
  for (int i = 0; i < n; ++i) {
    auto p = ledger::find_persistent(reqs[i]);
    if (!p || !p->active) continue;
    swapped_.push_back(i);
    handles_.push_back(reqs[i]);
    reqs[i] = p->inner;
    requests_.push_back(std::move(p));
  }
}

HandleSwap::~HandleSwap() {
  for (size_t k = 0; k < swapped_.size(); ++k) {
    MPI_Request& slot = reqs_[swapped_[k]];
    PersistentRequest& p = *requests_[k];
    if (slot == MPI_REQUEST_NULL)
      set_inactive(p);  // completed and freed by the call: the handle becomes inactive
    else
      p.inner = slot;
    slot = handles_[k];
  }
}

bool free_handle(MPI_Request* request, Status& result) {
  if (request == nullptr || !ledger::any_persistent()) return false;
  auto p = ledger::take_persistent(*request);
  if (!p) return false;
  result = ok_status();
  if (p->active) {
    // MPI: an active persistent request may be freed; its operation completes
    // on its own (the ledger keeps and finishes what it tracks)
    MPI_Request inner = p->inner;
    set_inactive(*p);
    if (!ledger::detach(inner)) result = DTMPI_MPI_STATUS_REPORTED(REAL(MPI_Request_free)(&inner));
  }
  result = first_error(std::move(result), DTMPI_MPI_FORWARD(REAL(MPI_Request_free)(request)));
  free_own_type(*p);
  return true;
}

bool cancel(MPI_Request request, Status& result) {
  if (!any_active()) return false;
  auto p = ledger::find_persistent(request);
  if (!p || !p->active) return false;
  result = DTMPI_MPI_FORWARD(REAL(MPI_Cancel)(&p->inner));
  return true;
}

bool active_operation(MPI_Request request, MPI_Request& operation) {
  if (!any_active()) return false;
  auto p = ledger::find_persistent(request);
  if (!p || !p->active) return false;
  operation = p->inner;
  return true;
}

}  // namespace dtmpi::transport::persistent
