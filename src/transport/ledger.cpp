#include "transport/ledger.hpp"

#include <mutex>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/system_mpi.hpp"
#include "base/footprint.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "runtime/device_pack.hpp"
#include "transport/batched_sends.hpp"
#include "transport/engine.hpp"
#include "transport/unpack_bytes.hpp"

namespace dtmpi::transport {

namespace rt = dtmpi::runtime;

namespace ledger {

std::atomic<int64_t> g_work{0};

namespace {

enum class Kind : uint8_t { kTracked, kPersistent, kMatched };

struct Key {
  Kind kind;
  uintptr_t handle;
  bool operator==(const Key& o) const { return kind == o.kind && handle == o.handle; }
};
struct KeyHash {
  size_t operator()(const Key& k) const { return std::hash<uintptr_t>()(k.handle) ^ static_cast<size_t>(k.kind); }
};
using Entry = std::variant<PendingOp, std::shared_ptr<PersistentRequest>, std::shared_ptr<MatchedMessage>>;

struct Table {
  std::mutex mu;
  // A request handle can be in flight more than once: Open MPI 4 returns one
  // static request (ompi_request_empty) for every send it completed inline,
  // so several tracked sends may share it; all ops under a handle are
  // finished together (the others are complete as far as the system MPI
  // goes, and their packs were queued on the same stream anyway).
  std::unordered_multimap<Key, Entry, KeyHash> entries;
  std::vector<std::pair<MPI_Request, PendingOp>> detached;  // freed by the application
  std::atomic<int> tracked{0}, persistent{0}, matched{0};
};

// never destroyed: MPI calls may still come from other static destructors
Table& table() {
  static Table* t = new Table;
  return *t;
}

Key tracked_key(MPI_Request r) { return Key{Kind::kTracked, key_of(r)}; }

// Per entry of the ledger (tracked requests, persistent requests, matched
// messages) and per detached request; staging buffers are the host pool's.
void report_footprint(std::vector<footprint::Part>& out) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  const size_t node = sizeof(std::pair<const Key, Entry>) + 2 * sizeof(void*);
  out.push_back({"request ledger", "requests",
                 static_cast<int64_t>(t.entries.size() * node + t.entries.bucket_count() * sizeof(void*) +
                                      t.detached.capacity() * sizeof(t.detached[0])),
                 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

}  // namespace

bool any_tracked() { return table().tracked.load(std::memory_order_relaxed) != 0; }
bool any_persistent() { return table().persistent.load(std::memory_order_relaxed) != 0; }
bool any_matched() { return table().matched.load(std::memory_order_relaxed) != 0; }

void track(MPI_Request req, PendingOp op) {
  if (op.kind == PendingOp::Kind::kSend && !op.reading) {
    int done = 0;
    if (DTMPI_MPI_WARN(REAL(MPI_Request_get_status)(req, &done, MPI_STATUS_IGNORE)) && done) {
      rt::release_staging(op.staging);
      rt::release_device_buffer(op.device);
      return;
    }
  }
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.entries.emplace(tracked_key(req), std::move(op));
  t.tracked.fetch_add(1, std::memory_order_relaxed);
  add_work();
}

void put_persistent(MPI_Request handle, std::shared_ptr<PersistentRequest> p) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.entries.emplace(Key{Kind::kPersistent, key_of(handle)}, std::move(p));
  t.persistent.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<PersistentRequest> find_persistent(MPI_Request handle) {
  auto& t = table();
  if (t.persistent.load(std::memory_order_relaxed) == 0 || handle == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard lock(t.mu);
  auto it = t.entries.find(Key{Kind::kPersistent, key_of(handle)});
  return it == t.entries.end() ? nullptr : std::get<std::shared_ptr<PersistentRequest>>(it->second);
}

std::shared_ptr<PersistentRequest> take_persistent(MPI_Request handle) {
  auto& t = table();
  if (t.persistent.load(std::memory_order_relaxed) == 0 || handle == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard lock(t.mu);
  auto it = t.entries.find(Key{Kind::kPersistent, key_of(handle)});
  if (it == t.entries.end()) return nullptr;
  auto p = std::get<std::shared_ptr<PersistentRequest>>(std::move(it->second));
  t.entries.erase(it);
  t.persistent.fetch_sub(1, std::memory_order_relaxed);
  return p;
}

void put_matched(MPI_Message m, std::shared_ptr<MatchedMessage> e) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  const Key k{Kind::kMatched, key_of(m)};
  if (auto it = t.entries.find(k); it != t.entries.end()) {
    it->second = std::move(e);  // a handle the system MPI reused: the old message was received behind our back
    return;
  }
  t.entries.emplace(k, std::move(e));
  t.matched.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<MatchedMessage> take_matched(MPI_Message m) {
  auto& t = table();
  if (t.matched.load(std::memory_order_relaxed) == 0) return nullptr;
  std::lock_guard lock(t.mu);
  auto it = t.entries.find(Key{Kind::kMatched, key_of(m)});
  if (it == t.entries.end()) return nullptr;
  auto e = std::get<std::shared_ptr<MatchedMessage>>(std::move(it->second));
  t.entries.erase(it);
  t.matched.fetch_sub(1, std::memory_order_relaxed);
  return e;
}

}  // namespace ledger

namespace {

// What a completed one-message receive brought: false if nothing to unpack
// (cancelled, failed); else its bytes and the whole elements among them.
bool landed(const PendingOp& op, const MPI_Status* st, int64_t& bytes, int64_t& elements) {
  int cancelled = 0;
  REAL(MPI_Test_cancelled)(st, &cancelled);
  if (cancelled || !mpi_status(st->MPI_ERROR, "the receive, in its status")) return false;
  MPI_Count n = 0;
  REAL(MPI_Get_elements_x)(st, MPI_BYTE, &n);
  bytes = n;
  // more than the receive holds: truncated, whatever the call returned (Open
  // MPI's MPI_Request_get_status returns success and the whole message's count)
  if (bytes > int64_t{op.count} * op.plan->size) return false;
  elements = op.plan->size > 0 ? bytes / op.plan->size : 0;
  return true;
}

}  // namespace

Status finish_receive(PendingOp& op, MPI_Status* st) {
  int64_t bytes = 0, elements = 0;
  if (!landed(op, st, bytes, elements)) return ok_status();
  DTMPI_TRACE("recv: one message landed");
  // every byte that arrived is unpacked, also those of an element the message
  // ends inside (MPI fills the received prefix of the typemap)
  Status done = ok_status();
  if (bytes > 0 && op.device.ptr) {
    rt::PointerInfo di;
    di.kind = rt::MemKind::kDevice;
    di.device = op.device.device;
    done = gpu_unpack_bytes(*op.plan, bytes, op.device.ptr, di, op.user, op.user_info);
  } else if (bytes > 0) {
    done = stage_in_bytes(*op.plan, bytes, op.staging, op.user, op.user_info, op.via_device);
  }
  if (!done) return Error{MPI_ERR_OTHER, "unpacking a received message failed: " + done.error().what};
  DTMPI_TRACE("recv: one message unpacked");
  return ok_status();
}

namespace ledger {

namespace {

void forget_tracked(Table& t, int64_t n = 1) {
  t.tracked.fetch_sub(static_cast<int>(n), std::memory_order_relaxed);
  remove_work(n);
}

// Takes one op tracked under `req` out of the ledger into `op`; false when none is left.
bool take_one(MPI_Request req, PendingOp& op) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.entries.find(tracked_key(req));
  if (it == t.entries.end()) return false;
  op = std::get<PendingOp>(std::move(it->second));
  t.entries.erase(it);
  return true;
}

// The rest of a taken op once its request completed with `status`: the
// unpack of a receive (unless `unpacked` already), the wait for a send's
// pack, its buffers returned.
Status finish_op(PendingOp& op, MPI_Status* status, bool unpacked) {
  Status done = ok_status();
  if (op.kind == PendingOp::Kind::kRecv && !unpacked) done = finish_receive(op, status);
  if (op.kind == PendingOp::Kind::kCompletion && op.completion) done = op.completion->finish();
  if (op.reading) {
    if (auto waited = rt::wait_marker(op.reading); !waited)
      done = Error{MPI_ERR_OTHER, "packing a GPU send buffer failed: " + waited.error().what};
    rt::release_marker(op.reading);
  }
  rt::release_staging(op.staging);
  rt::release_device_buffer(op.device);
  return done;
}

// Several requests' errors as one call's: the first is returned, the others
// are logged here (nobody else sees them).
void keep_first_error(Status& first, Status next) {
  if (next) return;
  if (first) {
    first = std::move(next);
    return;
  }
  if (!next.error().what.empty()) DTMPI_LOG(kError, "%s", next.error().what.c_str());
}

// The elements of a one-message receive that unpack_received can take
// (GPU memory from mapped pinned staging, the whole elements that arrived), or 0.
int64_t batchable_elements(const PendingOp& op, const MPI_Status* st) {
  if (op.kind != PendingOp::Kind::kRecv || op.device.ptr || op.via_device || !op.staging.pinned ||
      !rt::on_gpu(op.user_info) || !op.plan || op.plan->size <= 0)
    return 0;
  int64_t bytes = 0, elements = 0;
  // a message that ends inside an element: finish_receive unpacks it alone
  if (!landed(op, st, bytes, elements) || bytes % op.plan->size != 0) return 0;
  return elements;
}

}  // namespace

Status finish_tracked(MPI_Request req, MPI_Status* status) {
  Status done = ok_status();
  for (PendingOp op; take_one(req, op); op = PendingOp{}) {
    forget_tracked(table());
    keep_first_error(done, finish_op(op, status, false));
  }
  return done;
}

ClaimedOps::ClaimedOps(const MPI_Request* reqs, int n) {
  if (!any_tracked() || reqs == nullptr) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    auto [first, last] = t.entries.equal_range(tracked_key(reqs[i]));
    for (auto it = first; it != last; ++it) ops_.push_back(Entry{i, reqs[i], std::get<PendingOp>(std::move(it->second))});
    t.entries.erase(first, last);
  }
}

ClaimedOps::~ClaimedOps() {
  bool back = false;
  for (const auto& e : ops_) back |= !e.done;
  if (!back) return;
  auto& t = table();
  std::lock_guard lock(t.mu);
  for (auto& e : ops_)
    if (!e.done) t.entries.emplace(tracked_key(e.req), std::move(e.op));
}

Status ClaimedOps::finish(int slot, MPI_Status* status) { return finish_all(&slot, status, 1); }

Status ClaimedOps::finish_first(int n, MPI_Status* statuses) {
  if (ops_.empty()) return ok_status();
  // only the slots that carry ops: finish_all looks each one up
  std::vector<int> slots;
  std::vector<MPI_Status> sts;
  for (const auto& e : ops_)
    if (e.slot < n && (slots.empty() || slots.back() != e.slot)) slots.push_back(e.slot);
  sts.reserve(slots.size());
  for (int s : slots) sts.push_back(statuses[s]);
  Status done = finish_all(slots.data(), sts.data(), static_cast<int>(slots.size()));
  for (size_t k = 0; k < slots.size(); ++k) statuses[slots[k]] = sts[k];
  return done;
}

Status ClaimedOps::finish_all(const int* slots, MPI_Status* statuses, int n) {
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
        forget_tracked(table());
        taken.push_back({&e, &statuses[k]});
      }
  }
  if (taken.empty()) return ok_status();
  Status done = ok_status();
  // the one-message receives into GPU memory: one batched unpack (when more
  // than one, else the usual path)
  std::vector<rt::ReceivedPiece> pieces;
  std::vector<size_t> which;
  for (size_t k = 0; k < taken.size(); ++k)
    if (const int64_t elements = batchable_elements(taken[k].entry->op, taken[k].status)) {
      const PendingOp& op = taken[k].entry->op;
      pieces.push_back({op.plan.get(), elements, op.staging.ptr, op.user, op.user_info});
      which.push_back(k);
    }
  if (pieces.size() > 1) {
    DTMPI_TRACE("recv: one-message receives unpacked together");
    if (auto ok = rt::unpack_received(pieces.data(), pieces.size()); !ok)
      done = Error{MPI_ERR_OTHER, "unpacking received messages failed: " + ok.error().what};
    for (size_t k : which) taken[k].unpacked = true;
  }
  for (auto& t : taken) keep_first_error(done, finish_op(t.entry->op, t.status, t.unpacked));
  return done;
}

bool detach(MPI_Request req) {
  if (!any_tracked()) return false;
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto [first, last] = t.entries.equal_range(tracked_key(req));
  if (first == last) return false;
  for (auto it = first; it != last; ++it) t.detached.emplace_back(req, std::get<PendingOp>(std::move(it->second)));
  t.entries.erase(first, last);
  return true;  // still counted as tracked work until finished
}

namespace {

// Tests detached requests and finishes the completed ones.
void progress_detached() {
  if (!any_tracked()) return;
  auto& t = table();
  std::vector<std::pair<MPI_Request, PendingOp>> done;
  {
    std::lock_guard lock(t.mu);
    for (size_t i = 0; i < t.detached.size();) {
      int flag = 0;
      MPI_Status st;
      REAL(MPI_Test)(&t.detached[i].first, &flag, &st);
      if (!flag) {
        ++i;
        continue;
      }
      st.MPI_ERROR = MPI_SUCCESS;
      done.push_back(std::move(t.detached[i]));
      done.back().first = MPI_REQUEST_NULL;
      t.detached[i] = std::move(t.detached.back());
      t.detached.pop_back();
      // the status of a freed request is not reported anywhere: finish below
      PendingOp& op = done.back().second;
      Status finished = op.kind == PendingOp::Kind::kRecv ? finish_receive(op, &st) : ok_status();
      if (op.completion) finished = op.completion->finish();
      if (!finished && !finished.error().what.empty()) DTMPI_LOG(kError, "%s", finished.error().what.c_str());
    }
  }
  for (auto& d : done) {
    rt::release_marker(d.second.reading);  // a freed request: nobody waits for the buffer
    rt::release_staging(d.second.staging);
    rt::release_device_buffer(d.second.device);
    forget_tracked(t);
  }
}

bool any_detached() {
  if (!any_tracked()) return false;
  auto& t = table();
  std::lock_guard lock(t.mu);
  return !t.detached.empty();
}

}  // namespace

void progress() {
  // every MPI_Wait*/MPI_Test* passes here: the sends batched since the last one are queued now
  if (!flush_packs()) DTMPI_LOG(kError, "queuing batched packs failed");
  poll();
  progress_detached();
}

void drain() {
  drain_operations();
  while (any_detached()) progress_detached();
}

}  // namespace ledger

}  // namespace dtmpi::transport
