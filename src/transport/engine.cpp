#include "transport/engine.hpp"

#include <chrono>
#include <mutex>
#include <vector>

#include "base/footprint.hpp"
#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "runtime/status.hpp"
#include "transport/batched_sends.hpp"
#include "transport/ledger.hpp"

namespace dtmpi::transport {

std::atomic<int> g_active_ops{0};
std::atomic<int> g_live_requests{0};

namespace {

// What the generalized request's callbacks see. Owned jointly by the engine
// (until the operation finishes) and MPI (until free_fn).
struct GrequestState {
  std::atomic<int> refs{2};
  Operation* op = nullptr;  // guarded by Engine::mu; null once finished
  MPI_Request request = MPI_REQUEST_NULL;  // the application's handle
  Status outcome = ok_status();            // the operation's error, as query_fn hands it to the system MPI
  MPI_Status status{};  // the operation's result (MPI_ERROR aside)
};

void unref(GrequestState* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

struct Entry {
  std::unique_ptr<Operation> op;
  GrequestState* state = nullptr;
  MPI_Request request = MPI_REQUEST_NULL;
};

struct Engine {
  std::mutex mu;
  std::vector<Entry> ops;
};

Engine& engine() {
  static auto* e = new Engine;
  return *e;
}

// Per operation in flight (generalized requests of multi-message transfers).
void report_footprint(std::vector<footprint::Part>& out) {
  auto& e = engine();
  std::lock_guard lock(e.mu);
  out.push_back({"transfers in flight", "requests",
                 static_cast<int64_t>(e.ops.capacity() * sizeof(Entry) + e.ops.size() * sizeof(GrequestState)), 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

// Failed operations whose status this thread's current Wait/Test call queried.
thread_local std::vector<std::pair<MPI_Request, int>> t_failed;

int query_fn(void* extra, MPI_Status* status) {
  auto* s = static_cast<GrequestState*>(extra);
  *status = s->status;
  status->MPI_ERROR = code_of(s->outcome);
  if (!s->outcome) t_failed.emplace_back(s->request, s->outcome.error().code);
  return code_of(s->outcome);
}

int free_fn(void* extra) {
  g_live_requests.fetch_sub(1, std::memory_order_relaxed);
  ledger::remove_work();
  unref(static_cast<GrequestState*>(extra));
  return MPI_SUCCESS;
}

int cancel_fn(void* extra, int complete) {
  if (complete) return MPI_SUCCESS;
  auto* s = static_cast<GrequestState*>(extra);
  std::lock_guard lock(engine().mu);
  if (s->op) s->op->cancel();
  return MPI_SUCCESS;
}

thread_local bool t_in_progress = false;

// The status of op's result, MPI_ERROR left as `into` had it.
void result_status(const Operation& op, MPI_Status& into) {
  const int keep = into.MPI_ERROR;
  if (op.has_status) {
    into = op.status;
  } else {
    into.MPI_SOURCE = op.source;
    into.MPI_TAG = op.tag;
    runtime::set_bytes(&into, op.bytes);
    REAL(MPI_Status_set_cancelled)(&into, op.cancelled ? 1 : 0);
  }
  into.MPI_ERROR = keep;
}

}  // namespace

void begin_completions() { t_failed.clear(); }
bool any_completed_errors() { return !t_failed.empty(); }
Status completed_error(MPI_Request request) {
  for (const auto& [r, e] : t_failed)
    if (r == request) return Error{e, "", true};
  return ok_status();
}

void fill_status(const Operation& op, MPI_Status* status) {
  if (status != MPI_STATUS_IGNORE) result_status(op, *status);
}

// Steps every operation on every call, background ones included: the call at
// the entry of an MPI function may be the last before the application blocks
// inside the system MPI (a barrier dtmpi does not interpose), and a send tail
// whose receiver asked for the payload must answer then (stepping background
// operations on every 8th call only, to save a system test each, hung
// test_p2p_multi under MPICH).
void progress() {
  if (t_in_progress) return;
  Engine& e = engine();
  std::unique_lock lock(e.mu, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is progressing
  t_in_progress = true;
  for (size_t i = 0; i < e.ops.size();) {
    Entry& en = e.ops[i];
    if (!en.op->step()) {
      ++i;
      continue;
    }
    if (en.state) {
      GrequestState* s = en.state;
      result_status(*en.op, s->status);
      s->outcome = mpi_status(en.op->error, "", en.op->error_reported);
      s->op = nullptr;
      REAL(MPI_Grequest_complete)(en.request);
      unref(s);
    }
    e.ops[i] = std::move(e.ops.back());
    e.ops.pop_back();
    g_active_ops.fetch_sub(1, std::memory_order_relaxed);
    ledger::remove_work();
  }
  t_in_progress = false;
}

void start_background(std::unique_ptr<Operation> op) {
  Engine& e = engine();
  std::lock_guard lock(e.mu);
  e.ops.push_back(Entry{std::move(op), nullptr, MPI_REQUEST_NULL});
  g_active_ops.fetch_add(1, std::memory_order_relaxed);
  ledger::add_work();
}

Status start_with_request(std::unique_ptr<Operation> op, MPI_Request* request) {
  auto* state = new GrequestState;
  state->op = op.get();
  Status started = DTMPI_MPI_STATUS(REAL(MPI_Grequest_start)(query_fn, free_fn, cancel_fn, state, request));
  state->request = *request;
  if (!started) {
    // its system requests are posted and its buffers in use: it runs to its
    // end unobserved rather than being torn down under them
    delete state;
    start_background(std::move(op));
    return started;
  }
  g_live_requests.fetch_add(1, std::memory_order_relaxed);
  ledger::add_work();
  Engine& e = engine();
  std::lock_guard lock(e.mu);
  e.ops.push_back(Entry{std::move(op), state, *request});
  g_active_ops.fetch_add(1, std::memory_order_relaxed);
  ledger::add_work();
  return ok_status();
}

Status run(Operation& op, MPI_Status* status) {
  // a blocking call: what it waits for may wait for this rank's batched packs
  if (!flush_packs()) DTMPI_LOG(kError, "queuing batched packs failed");
  while (!op.step()) progress();
  fill_status(op, status);
  return mpi_status(op.error, "", op.error_reported);
}

void drain_operations() {
  if (!flush_packs()) DTMPI_LOG(kError, "queuing batched packs failed");
  const auto t0 = std::chrono::steady_clock::now();
  bool warned = false;
  while (busy()) {
    progress();
    const auto waited = std::chrono::steady_clock::now() - t0;
    if (!warned && waited > std::chrono::seconds(10)) {
      DTMPI_LOG(kWarn, "MPI_Finalize: %d transfers still in flight after 10 s (a peer has not received them)",
                g_active_ops.load());
      warned = true;
    }
    if (waited > std::chrono::seconds(60)) {  // an unmatched message: leave it, as the system MPI would
      DTMPI_LOG(kError, "MPI_Finalize: giving up on %d transfers no peer received", g_active_ops.load());
      return;
    }
  }
}

}  // namespace dtmpi::transport
