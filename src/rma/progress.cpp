// The target side of dtmpi's one-sided protocol and the completion of this
// rank's own messages (rma/protocol.hpp, docs/rma.md): requests that arrived
// are applied to the window memory one at a time, in arrival order; the lock
// is granted in request order; replies and acknowledgements go back in the
// order the requests came.
#include <algorithm>
#include <chrono>
#include <thread>
#include <cstring>
#include <vector>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "rma/atomic.hpp"
#include "rma/move.hpp"
#include "rma/named.hpp"
#include "rma/progress_op.hpp"
#include "rma/window.hpp"
#include "runtime/config.hpp"
#include "runtime/stats.hpp"
#include "transport/engine.hpp"
#include "type/plan_wire.hpp"
#include "type/registry.hpp"

namespace dtmpi::rma {
namespace {

thread_local int t_depth = 0;

struct Located {
  char* addr;
  runtime::PointerInfo info;
};

// Where (count, plan) at displacement `disp` lies in this rank's window
// memory; MPI_ERR_RMA_RANGE when any byte of it would fall outside.
Result<Located> locate(Window& w, int64_t disp, const type::PackPlan& plan, int64_t count) {
  const type::Bounds b = type::touched_bounds(plan);
  const bool touches = count > 0 && b.hi > b.lo;
  const int64_t reach = (count - 1) * plan.extent;
  const int64_t lo = touches ? b.lo + std::min<int64_t>(0, reach) : 0;
  const int64_t hi = touches ? b.hi + std::max<int64_t>(0, reach) : 0;
  if (w.flavor == Flavor::kDynamic) {
    const uintptr_t a = static_cast<uintptr_t>(disp);
    if (!touches) return Located{reinterpret_cast<char*>(a), runtime::PointerInfo{}};
    // every byte of [a + lo, a + hi) attached, possibly by several adjacent
    // regions of one memory kind (MPICH's rma/win_dynamic_rma_flush_get
    // attaches two halves of one array and accesses across the seam)
    uintptr_t at = a + static_cast<uintptr_t>(lo);
    const uintptr_t end = a + static_cast<uintptr_t>(hi);
    const Region* first = nullptr;
    while (true) {
      const Region* covering = nullptr;
      for (const Region& r : w.regions)
        if (at >= r.base && at < r.base + static_cast<uintptr_t>(r.bytes)) covering = &r;
      if (!covering || (first && (covering->info.kind != first->info.kind || covering->info.device != first->info.device)))
        return Error{MPI_ERR_RMA_RANGE, "a one-sided access outside the memory attached to a dynamic window"};
      if (!first) first = covering;
      at = covering->base + static_cast<uintptr_t>(covering->bytes);
      if (at >= end) break;
    }
    return Located{reinterpret_cast<char*>(a), first->info};
  }
  const int64_t off = disp * w.disp_unit;
  if (touches && (off + lo < 0 || off + hi > static_cast<int64_t>(w.bytes)))
    return Error{MPI_ERR_RMA_RANGE, "a one-sided access outside the target's window"};
  return Located{static_cast<char*>(w.base) + off, w.info};
}

void send_reply(Window& w, int origin, MessageBytes bytes) {
  Outgoing o;
  o.bytes = std::move(bytes);
  const int rc = REAL(MPI_Isend)(o.bytes.data(), static_cast<int>(o.bytes.size()), MPI_BYTE, origin, kTagReply,
                                 w.comm, &o.request);
  if (rc != MPI_SUCCESS) {
    w.deferred_error = rc;
    w.deferred_what = "sending a one-sided reply failed";
    return;
  }
  w.outgoing.push_back(std::move(o));
}

// target := target op origin, element by element, for `bytes` bytes of
// `element`s (MPI_REPLACE: the origin's; MPI_NO_OP: unchanged).
Status combine(unsigned char* target, const unsigned char* origin, int64_t bytes, int element, int op_idx) {
  const MPI_Op op = op_at(op_idx);
  const MPI_Datatype el = type_at(element);
  if (op == MPI_OP_NULL || el == MPI_DATATYPE_NULL) return Error{MPI_ERR_INTERN, "unknown accumulate op or type from a peer"};
  if (op == MPI_NO_OP) return ok_status();
  if (op == MPI_REPLACE) {
    std::memcpy(target, origin, static_cast<size_t>(bytes));
    return ok_status();
  }
  int el_size = 0;
  MPI_Aint lb = 0, extent = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_size)(el, &el_size));
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_extent)(el, &lb, &extent));
  if (el_size <= 0 || bytes % el_size != 0) return Error{MPI_ERR_TYPE, "accumulate data not whole elements"};
  const int64_t n = bytes / el_size;
  if (extent == el_size && lb == 0) {
    DTMPI_MPI_CHECK(REAL(MPI_Reduce_local)(origin, target, static_cast<int>(n), el, op));
    return ok_status();
  }
  // the pair types of MINLOC/MAXLOC (MPI_DOUBLE_INT: 12 bytes of data, extent
  // 16; MPI_SHORT_INT, MPI_LONG_INT, MPI_LONG_DOUBLE_INT): the packed elements
  // lie size bytes apart, MPI_Reduce_local reads them extent bytes apart --
  // each is laid out as its C struct first (found by MPICH's test
  // rma/acc_pairtype: every element past the first was wrong). The only
  // predefined types whose size is not their extent: {value; int}, the int
  // at the value's size rounded up to an int's alignment.
  const bool pair = el == MPI_DOUBLE_INT || el == MPI_SHORT_INT || el == MPI_LONG_INT || el == MPI_LONG_DOUBLE_INT ||
                    el == MPI_FLOAT_INT || el == MPI_2INT;
  const int64_t value_bytes = el_size - static_cast<int64_t>(sizeof(int));
  const int64_t int_at = (value_bytes + alignof(int) - 1) / alignof(int) * alignof(int);
  if (!pair || lb != 0 || int_at + static_cast<int64_t>(sizeof(int)) > extent)
    return Error{MPI_ERR_TYPE, "an accumulate element type whose size is not its extent"};
  std::vector<unsigned char> in(static_cast<size_t>(n * extent)), out(in.size());
  const auto spread = [&](const unsigned char* packed, unsigned char* laid) {
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(laid + i * extent, packed + i * el_size, static_cast<size_t>(value_bytes));
      std::memcpy(laid + i * extent + int_at, packed + i * el_size + value_bytes, sizeof(int));
    }
  };
  spread(origin, in.data());
  spread(target, out.data());
  DTMPI_MPI_CHECK(REAL(MPI_Reduce_local)(in.data(), out.data(), static_cast<int>(n), el, op));
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(target + i * el_size, out.data() + i * extent, static_cast<size_t>(value_bytes));
    std::memcpy(target + i * el_size + value_bytes, out.data() + i * extent + int_at, sizeof(int));
  }
  return ok_status();
}

// An accumulate request applied by device atomics (rma/atomic.hpp) where they
// cover its element type and op; false: apply it on the host.
Result<bool> apply_atomic(const RequestHeader& h, const type::PackPlan& plan, const Located& at,
                          const unsigned char* payload, bool payload_mapped, int origin, Window& w) {
  const MPI_Datatype el = type_at(h.element);
  const AtomicType t = atomic_type(el);
  const AtomicOp op = h.kind == Kind::kCompareSwap ? (t == AtomicType::kNone ? AtomicOp::kNone : AtomicOp::kCas)
                                                    : atomic_op(op_at(h.op), t);
  if (op == AtomicOp::kNone) return false;
  const int64_t size = (t == AtomicType::kI32 || t == AtomicType::kU32 || t == AtomicType::kF32) ? 4 : 8;
  const int64_t n = plan.size * h.count;
  const bool fetch = h.kind != Kind::kAccumulate;
  const bool values = op != AtomicOp::kNoOp;
  if (h.payload != (!values ? 0 : op == AtomicOp::kCas ? 2 * n : n))
    return Error{MPI_ERR_INTERN, "accumulate payload does not match its layout"};
  // operands in a message in pinned, mapped memory (64 KiB and more), old
  // values into one: one kernel in the window's layout reads and writes them
  // in place, no list of element offsets (rma/direct.cpp does the same for
  // origins on this node)
  if (op != AtomicOp::kCas && (!values || payload_mapped)) {
    MessageBytes old = MessageBytes::allocate(fetch ? static_cast<size_t>(n) : 0);
    auto eplan = type::plan_for(el);
    if (eplan && (!fetch || old.mapped())) {
      const LayoutSide target{&plan, h.count, at.addr};
      const LayoutSide operands{eplan.get(), n / size, const_cast<unsigned char*>(payload)};
      const LayoutSide fetched{eplan.get(), n / size, old.data()};
      auto done = atomic_apply_layouts(at.info.device, target, values ? &operands : nullptr,
                                       fetch ? &fetched : nullptr, n / size, t, op);
      if (!done || done.value()) {
        if (fetch) send_reply(w, origin, std::move(old));  // always answered: the origin waits for it
        if (!done) return done.error();
        runtime::count(runtime::Counter::kRmaLayoutKernels);
        return true;
      }
    }
  }
  std::vector<int64_t> offsets;
  int64_t first = 0;
  if (!atomic_offsets(plan, h.count, size, offsets, first)) return false;
  std::vector<unsigned char> old(fetch ? static_cast<size_t>(n) : 0);
  Status s = atomic_apply(at.info.device, at.addr, offsets.empty() ? nullptr : offsets.data(), first,
                          values ? payload : nullptr, op == AtomicOp::kCas ? payload + n : nullptr,
                          fetch ? old.data() : nullptr, n / size, t, op);
  if (fetch) send_reply(w, origin, std::move(old));  // always answered: the origin waits for it
  if (!s) return s.error();
  return true;
}

bool grantable(const Window& w, int lock_type) {
  if (lock_type == MPI_LOCK_EXCLUSIVE) return w.exclusive_holder < 0 && w.shared_holders == 0;
  return w.exclusive_holder < 0;
}

void grant(Window& w, int origin, int lock_type) {
  if (lock_type == MPI_LOCK_EXCLUSIVE) w.exclusive_holder = origin;
  else ++w.shared_holders;
  send_reply(w, origin, std::vector<unsigned char>(8, 0));
}

void grant_waiting(Window& w) {
  while (!w.lock_queue.empty() && grantable(w, w.lock_queue.front().second)) {
    auto [origin, type] = w.lock_queue.front();
    w.lock_queue.pop_front();
    grant(w, origin, type);
  }
}

Status handle(Window& w, int origin, const MessageBytes& msg) {
  RequestHeader h;
  if (msg.size() < sizeof h) return Error{MPI_ERR_INTERN, "short one-sided request from a peer"};
  std::memcpy(&h, msg.data(), sizeof h);
  size_t pos = sizeof h;
  Peer& p = w.peers[static_cast<size_t>(origin)];
  if (h.plan_bytes > 0) {
    auto plan = type::decode_plan(msg.data(), std::min(msg.size(), pos + static_cast<size_t>(h.plan_bytes)), &pos);
    if (!plan) return plan.error();
    if (h.plan_id != static_cast<int32_t>(p.plans.size())) return Error{MPI_ERR_INTERN, "one-sided plan ids out of order"};
    p.plans.push_back(std::make_shared<const type::PackPlan>(std::move(plan.value())));
  }
  const type::PackPlan* plan = nullptr;
  if (h.plan_id >= 0) {
    if (static_cast<size_t>(h.plan_id) >= p.plans.size()) return Error{MPI_ERR_INTERN, "unknown one-sided plan id"};
    plan = p.plans[static_cast<size_t>(h.plan_id)].get();
  }
  if (h.payload < 0 || pos + static_cast<size_t>(h.payload) > msg.size())
    return Error{MPI_ERR_INTERN, "one-sided request shorter than its payload"};
  const unsigned char* payload = msg.data() + pos;
  const bool data = h.kind == Kind::kPut || h.kind == Kind::kGet || h.kind == Kind::kAccumulate ||
                    h.kind == Kind::kGetAccumulate || h.kind == Kind::kCompareSwap;
  if (data && !plan) return Error{MPI_ERR_INTERN, "one-sided data request without a layout"};
  switch (h.kind) {
    case Kind::kPut: {
      if (h.payload != plan->size * h.count) return Error{MPI_ERR_INTERN, "put payload does not match its layout"};
      auto at = locate(w, h.disp, *plan, h.count);
      if (!at) return at.error();
      DTMPI_TRY(unpack_any(*plan, h.count, payload, at.value().addr, at.value().info));
      break;
    }
    case Kind::kGet: {
      auto at = locate(w, h.disp, *plan, h.count);
      MessageBytes out = MessageBytes::allocate(static_cast<size_t>(plan->size * h.count));
      Status s = at ? pack_any(*plan, h.count, at.value().addr, at.value().info, out.data()) : Status(at.error());
      send_reply(w, origin, std::move(out));  // always answered: the origin waits for it
      if (!s) return s;
      break;
    }
    case Kind::kAccumulate:
    case Kind::kGetAccumulate:
    case Kind::kCompareSwap: {
      const int64_t n = plan->size * h.count;
      auto at = locate(w, h.disp, *plan, h.count);
      if (at && at.value().info.kind == runtime::MemKind::kDevice) {
        // device window memory: the same atomics as the direct path of
        // origins on this node, so both kinds of accumulate stay atomic
        auto done = apply_atomic(h, *plan, at.value(), payload, msg.mapped(), origin, w);
        if (!done) return done.error();
        if (done.value()) break;
      }
      std::vector<unsigned char> old(static_cast<size_t>(n));
      Status s = at ? pack_any(*plan, h.count, at.value().addr, at.value().info, old.data()) : Status(at.error());
      if (h.kind != Kind::kAccumulate) send_reply(w, origin, old);
      if (!s) return s;
      const bool no_op = h.kind != Kind::kCompareSwap && op_at(h.op) == MPI_NO_OP;
      if (no_op) break;
      const int64_t want = h.kind == Kind::kCompareSwap ? 2 * n : n;
      if (h.payload != want) return Error{MPI_ERR_INTERN, "accumulate payload does not match its layout"};
      if (h.kind == Kind::kCompareSwap) {
        if (std::memcmp(old.data(), payload + n, static_cast<size_t>(n)) != 0) break;
        std::memcpy(old.data(), payload, static_cast<size_t>(n));
      } else {
        DTMPI_TRY(combine(old.data(), payload, n, h.element, h.op));
      }
      DTMPI_TRY(unpack_any(*plan, h.count, old.data(), at.value().addr, at.value().info));
      break;
    }
    case Kind::kLock:
      if (w.lock_queue.empty() && grantable(w, h.lock_type)) grant(w, origin, h.lock_type);
      else w.lock_queue.emplace_back(origin, h.lock_type);
      break;
    case Kind::kUnlock:
      if (h.lock_type == 0) {  // not taken nocheck
        if (w.exclusive_holder == origin) w.exclusive_holder = -1;
        else if (w.shared_holders > 0) --w.shared_holders;
      }
      send_reply(w, origin, std::vector<unsigned char>(8, 0));
      grant_waiting(w);
      break;
    case Kind::kFlush:
      send_reply(w, origin, std::vector<unsigned char>(8, 0));
      break;
    case Kind::kPost: ++p.posts; break;
    case Kind::kComplete: ++p.completes; break;
    case Kind::kFence: ++w.fence_marks; break;
    default: return Error{MPI_ERR_INTERN, "unknown one-sided request kind from a peer"};
  }
  if (data) runtime::count(runtime::Counter::kRmaApplied);
  return ok_status();
}

void defer(Window& w, const Error& e) {
  DTMPI_LOG(kError, "one-sided window: %s", e.what.c_str());
  if (w.deferred_error == MPI_SUCCESS) {
    w.deferred_error = e.code < 0 ? MPI_ERR_OTHER : e.code;
    w.deferred_what = e.what;
  }
}

void progress_window(Window& w) {
  for (;;) {
    int flag = 0;
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    if (REAL(MPI_Improbe)(MPI_ANY_SOURCE, kTagRequest, w.comm, &flag, &m, &st) != MPI_SUCCESS || !flag) break;
    int n = 0;
    REAL(MPI_Get_count)(&st, MPI_BYTE, &n);
    MessageBytes msg = MessageBytes::allocate(static_cast<size_t>(std::max(n, 0)));
    if (REAL(MPI_Mrecv)(msg.data(), n, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      defer(w, Error{MPI_ERR_OTHER, "receiving a one-sided request failed"});
      break;
    }
    Status s = handle(w, st.MPI_SOURCE, msg);
    if (!s) defer(w, s.error());
  }
  for (auto it = w.outgoing.begin(); it != w.outgoing.end();) {
    int done = 0;
    REAL(MPI_Test)(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? w.outgoing.erase(it) : it + 1;
  }
  for (int t = 0; t < w.size; ++t) {
    Peer& p = w.peers[static_cast<size_t>(t)];
    while (!p.replies.empty()) {
      PendingReply& r = p.replies.front();
      int done = 0;
      REAL(MPI_Test)(&r.request, &done, MPI_STATUS_IGNORE);
      if (!done) break;
      if (r.plan) {
        Status s = unpack_any(*r.plan, r.count, r.bytes.data(), r.user, r.user_info);
        if (!s) defer(w, s.error());
      }
      // released: an MPI_R* request's step reads it without the lock (reply_done)
      std::atomic_ref<uint64_t>(p.replies_done).store(r.seq, std::memory_order_release);
      p.replies.pop_front();
    }
  }
}

}  // namespace

void progress() {
  if (g_windows.load(std::memory_order_relaxed) == 0 || t_depth > 0) return;
  std::unique_lock lock(rma_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is progressing
  ++t_depth;
  // no copy of the list (this runs on every dtmpi call while windows exist):
  // windows are created and freed under the same lock, and applying a
  // request never does either
  for (Window* w : window_list()) progress_window(*w);
  --t_depth;
}

void wait_until_fn(bool (*done)(void*), void* ctx) {
  while (!done(ctx)) {
    progress();
    if (done(ctx)) break;
    transport::poll();  // dtmpi's other transfers in flight go on meanwhile
    let_others_in();
  }
}

Status send_request(Window& w, int target, MessageBytes bytes, bool operation) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return Error{MPI_ERR_COUNT, "one-sided operation larger than 2 GiB"};
  Outgoing o;
  o.bytes = std::move(bytes);
  DTMPI_MPI_CHECK(REAL(MPI_Isend)(o.bytes.data(), static_cast<int>(o.bytes.size()), MPI_BYTE, target, kTagRequest,
                                  w.comm, &o.request));
  w.outgoing.push_back(std::move(o));
  if (operation) {
    Peer& p = w.peers[static_cast<size_t>(target)];
    p.sent_in_epoch = p.sent_since_flush = true;
    runtime::count(runtime::Counter::kRmaOps);
  }
  return ok_status();
}

Status send_control(Window& w, int target, Kind kind, int32_t lock_type) {
  RequestHeader h;
  h.kind = kind;
  h.lock_type = lock_type;
  std::vector<unsigned char> bytes(sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  return send_request(w, target, std::move(bytes), false);
}

Result<uint64_t> expect_reply(Window& w, int target, PendingReply r, int64_t bytes) {
  if (bytes > INT32_MAX) return Error{MPI_ERR_COUNT, "one-sided reply larger than 2 GiB"};
  Peer& p = w.peers[static_cast<size_t>(target)];
  r.bytes = MessageBytes::allocate(static_cast<size_t>(bytes));
  DTMPI_MPI_CHECK(REAL(MPI_Irecv)(r.bytes.data(), static_cast<int>(bytes), MPI_BYTE, target, kTagReply, w.comm,
                                  &r.request));
  r.seq = ++p.replies_posted;
  p.replies.push_back(std::move(r));
  return p.replies_posted;
}

Status take_deferred(Window& w) {
  if (w.deferred_error == MPI_SUCCESS) return ok_status();
  Error e{w.deferred_error, w.deferred_what};
  w.deferred_error = MPI_SUCCESS;
  w.deferred_what.clear();
  return e;
}

// --- the engine operation -----------------------------------------------------

namespace {
std::atomic<bool> g_stopped{false};

class ProgressOp final : public transport::Operation {
 public:
  bool step() override {
    if (g_stopped.load(std::memory_order_relaxed) || g_windows.load(std::memory_order_relaxed) == 0) return true;
    progress();
    return false;
  }
};
}  // namespace

void start_progress_op() {
  g_stopped.store(false, std::memory_order_relaxed);
  transport::start_background(std::make_unique<ProgressOp>());
}

void stop_progress_op() {
  g_stopped.store(true, std::memory_order_relaxed);
  stop_progress_thread();
}

namespace {
std::thread g_thread;
std::atomic<bool> g_thread_run{false};
}  // namespace

bool progress_thread_serves() {
  if (runtime::config().rma_thread == "off") return false;
  int level = MPI_THREAD_SINGLE;
  return REAL(MPI_Query_thread)(&level) == MPI_SUCCESS && level == MPI_THREAD_MULTIPLE;
}

void start_progress_thread() {
  if (g_thread.joinable() || !progress_thread_serves()) return;
  g_thread_run.store(true);
  g_thread = std::thread([] {
    // a short sleep between rounds: a request waits at most ~50 us more
    // than when the target calls MPI itself, and an idle rank costs little
    while (g_thread_run.load(std::memory_order_relaxed)) {
      progress();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
}

void stop_progress_thread() {
  if (!g_thread.joinable()) return;
  g_thread_run.store(false);
  g_thread.join();
}

}  // namespace dtmpi::rma
