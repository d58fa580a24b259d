#include "runtime/requests.hpp"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/footprint.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"

namespace dtmpi::runtime {

std::atomic<int64_t> g_tracked{0};

namespace {

struct Table {
  std::mutex mu;
  std::unordered_multimap<MPI_Request, PendingOp> ops;
  std::vector<std::pair<MPI_Request, PendingOp>> detached;  // freed by the app
};

Table& table() {
  static Table* t = new Table;
  return *t;
}

// Per request in flight: the side table's node (staging buffers are the host pool's).
void report_footprint(std::vector<footprint::Part>& out) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  const size_t node = sizeof(std::pair<const MPI_Request, PendingOp>) + 2 * sizeof(void*);
  out.push_back({"tracked requests", "requests",
                 static_cast<int64_t>(t.ops.size() * node + t.ops.bucket_count() * sizeof(void*) +
                                      t.detached.capacity() * sizeof(t.detached[0])),
                 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

}  // namespace

// A handle can be in flight more than once: Open MPI 4 returns one static
// request (ompi_request_empty) for every send it completed inline, so several
// tracked sends may share it (a map overwrote the older: its staging leaked
// and its pack was not waited for). All ops under a handle are finished
// together, when the application completes any request with that handle: the
// others are complete as far as the system MPI goes, and waiting for their
// packs as well only waits for work queued on the same stream anyway.
void track(MPI_Request req, PendingOp op) {
  if (op.kind == PendingOp::Kind::kSend && !op.reading) {
    int done = 0;
    if (PMPI_Request_get_status(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
      release_staging(op.staging);
      release_device_buffer(op.device);
      return;
    }
  }
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.ops.emplace(req, std::move(op));
  g_tracked.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// What a completed one-message receive brought: false if nothing to unpack
// (cancelled, failed); else its bytes and the whole elements among them.
bool landed(const PendingOp& op, const MPI_Status* st, int64_t& bytes, int64_t& elements) {
  int cancelled = 0;
  PMPI_Test_cancelled(st, &cancelled);
  if (cancelled || st->MPI_ERROR != MPI_SUCCESS) return false;
  MPI_Count n = 0;
  PMPI_Get_elements_x(st, MPI_BYTE, &n);
  bytes = n;
  // more than the receive holds: truncated, whatever the call returned (Open
  // MPI's MPI_Request_get_status returns success and the whole message's count)
  if (bytes > int64_t{op.count} * op.plan->size) return false;
  elements = op.plan->size > 0 ? bytes / op.plan->size : 0;
  return true;
}

}  // namespace

int finish_receive(PendingOp& op, MPI_Status* st) {
  int64_t bytes = 0, elements = 0;
  if (!landed(op, st, bytes, elements)) return MPI_SUCCESS;
  DTMPI_TRACE("recv: one message landed");
  // every byte that arrived is unpacked, also those of an element the message
  // ends inside (MPI fills the received prefix of the typemap)
  Status done = ok_status();
  if (bytes > 0 && op.device.ptr) {
    PointerInfo di;
    di.kind = MemKind::kDevice;
    di.device = op.device.device;
    done = gpu_unpack_bytes(*op.plan, bytes, op.device.ptr, di, op.user, op.user_info);
  } else if (bytes > 0) {
    done = stage_in_bytes(*op.plan, bytes, op.staging, op.user, op.user_info, op.via_device);
  }
  if (!done) {
    DTMPI_LOG(kError, "unpacking a received message failed: %s", done.error().what.c_str());
    return MPI_ERR_OTHER;
  }
  DTMPI_TRACE("recv: one message unpacked");
  return MPI_SUCCESS;
}

namespace {

// Takes one op tracked under `req` (see track) out of the table into `op`;
// false when none is left.
bool take_one(MPI_Request req, PendingOp& op) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.ops.find(req);
  if (it == t.ops.end()) return false;
  op = std::move(it->second);
  t.ops.erase(it);
  return true;
}

}  // namespace

namespace {

// The rest of a taken op once its request completed with `status`: the
// unpack of a receive (unless `unpacked` already), the wait for a send's
// pack, its buffers returned. Returns an MPI error code.
int finish_op(PendingOp& op, MPI_Status* status, bool unpacked) {
  int rc = MPI_SUCCESS;
  if (op.kind == PendingOp::Kind::kRecv && !unpacked) rc = finish_receive(op, status);
  if (op.kind == PendingOp::Kind::kCompletion && op.completion) rc = op.completion->finish();
  if (op.reading) {
    if (auto done = wait_marker(op.reading); !done) {
      DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", done.error().what.c_str());
      rc = MPI_ERR_OTHER;
    }
    release_marker(op.reading);
  }
  release_staging(op.staging);
  release_device_buffer(op.device);
  return rc;
}

// The elements of a one-message receive that unpack_received can take
// (GPU memory from mapped pinned staging, the whole elements that arrived),
// or 0.
int64_t batchable_elements(const PendingOp& op, const MPI_Status* st) {
  if (op.kind != PendingOp::Kind::kRecv || op.device.ptr || op.via_device || !op.staging.pinned ||
      !on_gpu(op.user_info) || !op.plan || op.plan->size <= 0)
    return 0;
  int64_t bytes = 0, elements = 0;
  // a message that ends inside an element: finish_receive unpacks it alone
  if (!landed(op, st, bytes, elements) || bytes % op.plan->size != 0) return 0;
  return elements;
}

}  // namespace

int finish_tracked(MPI_Request req, MPI_Status* status) {
  int rc = MPI_SUCCESS;
  for (PendingOp op; take_one(req, op); op = PendingOp{}) {
    g_tracked.fetch_sub(1, std::memory_order_relaxed);
    const int orc = finish_op(op, status, false);
    if (rc == MPI_SUCCESS) rc = orc;
  }
  return rc;
}

ClaimedOps::ClaimedOps(const MPI_Request* reqs, int n) {
  if (!any_tracked() || reqs == nullptr) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    auto [first, last] = t.ops.equal_range(reqs[i]);
    for (auto it = first; it != last; ++it) ops_.push_back(Entry{i, reqs[i], std::move(it->second)});
    t.ops.erase(first, last);
  }
}

ClaimedOps::~ClaimedOps() {
  bool back = false;
  for (const auto& e : ops_) back |= !e.done;
  if (!back) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  for (auto& e : ops_)
    if (!e.done) t.ops.emplace(e.req, std::move(e.op));
}

int ClaimedOps::finish(int slot, MPI_Status* status) {
  return finish_all(&slot, status, 1);
}

int ClaimedOps::finish_all(const int* slots, MPI_Status* statuses, int n) {
  struct Taken {
    Entry* entry;
    MPI_Status* status;
    bool unpacked = false;
  };
  std::vector<Taken> taken;
  for (int k = 0; k < n; ++k) {
    if (statuses[k].MPI_ERROR == MPI_ERR_PENDING) continue;
    for (auto& e : ops_)
      if (e.slot == slots[k] && !e.done) {
        e.done = true;
        g_tracked.fetch_sub(1, std::memory_order_relaxed);
        taken.push_back({&e, &statuses[k]});
      }
  }
  if (taken.empty()) return MPI_SUCCESS;
  int rc = MPI_SUCCESS;
  // the one-message receives into GPU memory: one batched unpack (when more
  // than one, else the usual path)
  std::vector<ReceivedPiece> pieces;
  std::vector<size_t> which;
  for (size_t k = 0; k < taken.size(); ++k)
    if (const int64_t elements = batchable_elements(taken[k].entry->op, taken[k].status)) {
      const PendingOp& op = taken[k].entry->op;
      pieces.push_back({op.plan.get(), elements, op.staging.ptr, op.user, op.user_info});
      which.push_back(k);
    }
  if (pieces.size() > 1) {
    DTMPI_TRACE("recv: one-message receives unpacked together");
    if (auto ok = unpack_received(pieces.data(), pieces.size()); !ok) {
      DTMPI_LOG(kError, "unpacking received messages failed: %s", ok.error().what.c_str());
      rc = MPI_ERR_OTHER;
    }
    for (size_t k : which) taken[k].unpacked = true;
  }
  for (auto& t : taken) {
    const int orc = finish_op(t.entry->op, t.status, t.unpacked);
    if (rc == MPI_SUCCESS) rc = orc;
  }
  return rc;
}

bool detach(MPI_Request req) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto [first, last] = t.ops.equal_range(req);
  if (first == last) return false;
  for (auto it = first; it != last; ++it) t.detached.emplace_back(req, std::move(it->second));
  t.ops.erase(first, last);
  return true;  // still counted in g_tracked until finished
}

bool any_detached() {
  if (!any_tracked()) return false;
  auto& t = table();
  std::lock_guard lock(t.mu);
  return !t.detached.empty();
}

void progress() {
  // every MPI_Wait*/MPI_Test* passes here: the sends batched since the last one are queued now
  if (!flush_packs()) DTMPI_LOG(kError, "queuing batched packs failed");
  auto& t = table();
  std::vector<std::pair<MPI_Request, PendingOp>> done;
  {
    std::lock_guard lock(t.mu);
    for (size_t i = 0; i < t.detached.size();) {
      int flag = 0;
      MPI_Status st;
      PMPI_Test(&t.detached[i].first, &flag, &st);
      if (flag) {
        st.MPI_ERROR = MPI_SUCCESS;
        done.push_back(std::move(t.detached[i]));
        done.back().first = MPI_REQUEST_NULL;
        t.detached[i] = std::move(t.detached.back());
        t.detached.pop_back();
        // the status of a freed request is not reported anywhere: finish below
        if (done.back().second.kind == PendingOp::Kind::kRecv) {
          PendingOp& op = done.back().second;
          finish_receive(op, &st);
        }
        if (done.back().second.completion) done.back().second.completion->finish();
      } else {
        ++i;
      }
    }
  }
  for (auto& d : done) {
    release_marker(d.second.reading);  // a freed request: nobody waits for the buffer
    release_staging(d.second.staging);
    release_device_buffer(d.second.device);
    g_tracked.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace dtmpi::runtime
