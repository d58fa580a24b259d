// The origin side of dtmpi's one-sided operations (rma/ops.hpp).
#include "rma/ops.hpp"

#include <algorithm>
#include <cstring>

#include "base/system_mpi.hpp"
#include "rma/direct.hpp"
#include "rma/move.hpp"
#include "rma/named.hpp"
#include "transport/engine.hpp"
#include "type/plan_wire.hpp"
#include "type/registry.hpp"

namespace dtmpi::rma {
namespace {

using PlanPtr = std::shared_ptr<const type::PackPlan>;

Result<PlanPtr> plan_of(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return Error{MPI_ERR_TYPE, "MPI_DATATYPE_NULL in a one-sided operation"};
  PlanPtr p = type::plan_for(t);
  if (!p) return Error{MPI_ERR_TYPE, "a one-sided operation's datatype that dtmpi cannot plan (uncommitted?)"};
  return p;
}

// The request of an MPI_R* operation: complete when reply `seq` of `target`
// has arrived and been unpacked (0: complete at once -- puts and
// accumulates copied the origin buffer when issued).
class RmaRequestOp final : public transport::Operation {
 public:
  RmaRequestOp(Window& w, int target, uint64_t seq) : w_(w), target_(target), seq_(seq) {}
  bool step() override {
    if (seq_ == 0) return true;
    progress();
    // without the one-sided lock: this runs inside the engine's progress,
    // under its mutex, which a thread holding the lock may be waiting for
    // (start_with_request); reply_done reads an atomic
    return reply_done(w_, target_, seq_);
  }

 private:
  Window& w_;
  int target_;
  uint64_t seq_;
};

Status make_request(Window& w, int target, uint64_t seq, MPI_Request* request) {
  if (!request) return ok_status();
  return transport::start_with_request(std::make_unique<RmaRequestOp>(w, target, seq), request);
}

// The message of one data operation: header, the target plan's definition on
// its first use with this target, then `payload` bytes the caller fills.
struct Message {
  MessageBytes bytes;
  size_t payload_at = 0;
  unsigned char* payload() { return bytes.data() + payload_at; }
};

Result<Message> compose(Window& w, RequestHeader h, int target, const PlanPtr& tplan, int64_t payload) {
  Peer& p = w.peers[static_cast<size_t>(target)];
  std::vector<unsigned char> defn;
  auto it = p.plan_ids.find(tplan.get());
  if (it != p.plan_ids.end()) {
    h.plan_id = it->second;
  } else {
    h.plan_id = static_cast<int32_t>(p.plans_kept.size());
    p.plans_kept.push_back(tplan);
    p.plan_ids[tplan.get()] = h.plan_id;
    type::encode_plan(*tplan, defn);
  }
  h.plan_bytes = static_cast<int32_t>(defn.size());
  h.payload = payload;
  Message m;
  m.bytes = MessageBytes::allocate(sizeof h + defn.size() + static_cast<size_t>(payload));
  std::memcpy(m.bytes.data(), &h, sizeof h);
  if (!defn.empty()) std::memcpy(m.bytes.data() + sizeof h, defn.data(), defn.size());
  m.payload_at = sizeof h + defn.size();
  return m;
}

// Checks the target rank and, for windows of fixed size, that the access
// stays inside the target's window (MPI_ERR_RMA_RANGE at the origin, where
// the application sees it).
Status check_target(const Window& w, const TargetSide& t, const type::PackPlan& plan) {
  if (t.rank < 0 || t.rank >= w.size) return Error{MPI_ERR_RANK, "one-sided operation to an invalid rank"};
  // an access epoch to the target: a fence's, a start's naming it, or a lock on it
  const bool started = std::find(w.start_group.begin(), w.start_group.end(), t.rank) != w.start_group.end();
  if (!w.fence_epoch && !started && w.peers[static_cast<size_t>(t.rank)].lock_type == 0)
    return Error{MPI_ERR_RMA_SYNC, "one-sided operation outside an access epoch to its target"};
  if (t.count < 0) return Error{MPI_ERR_COUNT, "one-sided operation with a negative count"};
  if (w.flavor == Flavor::kDynamic || t.count == 0) return ok_status();
  const type::Bounds b = type::touched_bounds(plan);
  if (b.hi <= b.lo) return ok_status();
  const Peer& p = w.peers[static_cast<size_t>(t.rank)];
  const int64_t reach = (t.count - 1) * plan.extent;
  const int64_t off = static_cast<int64_t>(t.disp) * p.disp_unit;
  if (off + b.lo + std::min<int64_t>(0, reach) < 0 || off + b.hi + std::max<int64_t>(0, reach) > p.size)
    return Error{MPI_ERR_RMA_RANGE, "one-sided operation outside the target's window"};
  return ok_status();
}

struct Planned {
  PlanPtr origin, target;
  int64_t bytes = 0;
};

Result<Planned> plan_pair(const Window& w, const Side& o, const TargetSide& t) {
  if (o.count < 0) return Error{MPI_ERR_COUNT, "one-sided operation with a negative count"};
  auto op = plan_of(o.type);
  if (!op) return op.error();
  auto tp = plan_of(t.type);
  if (!tp) return tp.error();
  DTMPI_TRY(check_target(w, t, *tp.value()));
  Planned p{op.value(), tp.value(), op.value()->size * o.count};
  if (p.bytes != tp.value()->size * t.count)
    return Error{MPI_ERR_TYPE, "one-sided operation: origin and target datatypes hold different amounts of data"};
  return p;
}

Result<std::pair<int32_t, int32_t>> accumulate_codes(MPI_Datatype origin, MPI_Datatype target, MPI_Op op,
                                                     bool origin_used) {
  const int op_idx = op_index(op);
  if (op_idx < 0) return Error{MPI_ERR_OP, "one-sided accumulate with an op that is not predefined"};
  auto te = element_type(target);
  if (!te) return te.error();
  if (origin_used) {
    auto oe = element_type(origin);
    if (!oe) return oe.error();
    if (oe.value() != te.value())
      return Error{MPI_ERR_TYPE, "accumulate: origin and target datatypes of different predefined types"};
  }
  return std::pair<int32_t, int32_t>{type_index(te.value()), op_idx};
}

}  // namespace

Status put(Window& w, Side o, TargetSide t, MPI_Request* request) {
  RmaLock lock;
  if (t.rank == MPI_PROC_NULL) return make_request(w, 0, 0, request);
  auto pp = plan_pair(w, o, t);
  if (!pp) return pp.error();
  auto direct = direct_put(w, o, t, *pp.value().origin, *pp.value().target, pp.value().bytes);
  if (!direct) return direct.error();
  if (direct.value()) return make_request(w, t.rank, 0, request);
  RequestHeader h;
  h.kind = Kind::kPut;
  h.disp = t.disp;
  h.count = t.count;
  auto m = compose(w, h, t.rank, pp.value().target, pp.value().bytes);
  if (!m) return m.error();
  DTMPI_TRY(pack_any(*pp.value().origin, o.count, o.buf, runtime::pointer_info(o.buf), m.value().payload()));
  DTMPI_TRY(send_request(w, t.rank, std::move(m.value().bytes), true));
  return make_request(w, t.rank, 0, request);
}

Status get(Window& w, Side o, TargetSide t, MPI_Request* request) {
  RmaLock lock;
  if (t.rank == MPI_PROC_NULL) return make_request(w, 0, 0, request);
  auto pp = plan_pair(w, o, t);
  if (!pp) return pp.error();
  auto direct = direct_get(w, o, t, *pp.value().origin, *pp.value().target, pp.value().bytes);
  if (!direct) return direct.error();
  if (direct.value()) return make_request(w, t.rank, 0, request);
  RequestHeader h;
  h.kind = Kind::kGet;
  h.disp = t.disp;
  h.count = t.count;
  auto m = compose(w, h, t.rank, pp.value().target, 0);
  if (!m) return m.error();
  DTMPI_TRY(send_request(w, t.rank, std::move(m.value().bytes), true));
  PendingReply r;
  r.plan = pp.value().origin;
  r.count = o.count;
  r.user = o.buf;
  r.user_info = runtime::pointer_info(o.buf);
  auto seq = expect_reply(w, t.rank, std::move(r), pp.value().bytes);
  if (!seq) return seq.error();
  return make_request(w, t.rank, seq.value(), request);
}

Status accumulate(Window& w, Side o, TargetSide t, MPI_Op op, MPI_Request* request) {
  RmaLock lock;
  if (t.rank == MPI_PROC_NULL) return make_request(w, 0, 0, request);
  auto pp = plan_pair(w, o, t);
  if (!pp) return pp.error();
  // nothing moves: no element types to match (MPICH's rma/badrma), the op still checked
  if (pp.value().bytes == 0) {
    if (op_index(op) < 0) return Error{MPI_ERR_OP, "one-sided accumulate with an op that is not predefined"};
    return make_request(w, t.rank, 0, request);
  }
  auto codes = accumulate_codes(o.type, t.type, op, true);
  if (!codes) return codes.error();
  auto direct = direct_accumulate(w, o, nullptr, t, op, type_at(codes.value().first), pp.value().origin.get(),
                                  *pp.value().target, nullptr, pp.value().bytes);
  if (!direct) return direct.error();
  if (direct.value()) return make_request(w, t.rank, 0, request);
  queue_accumulate(w.peers[static_cast<size_t>(t.rank)]);
  RequestHeader h;
  h.kind = Kind::kAccumulate;
  h.disp = t.disp;
  h.count = t.count;
  h.element = codes.value().first;
  h.op = codes.value().second;
  const int64_t payload = op == MPI_NO_OP ? 0 : pp.value().bytes;
  auto m = compose(w, h, t.rank, pp.value().target, payload);
  if (!m) return m.error();
  if (payload > 0)
    DTMPI_TRY(pack_any(*pp.value().origin, o.count, o.buf, runtime::pointer_info(o.buf), m.value().payload()));
  DTMPI_TRY(send_request(w, t.rank, std::move(m.value().bytes), true));
  return make_request(w, t.rank, 0, request);
}

Status get_accumulate(Window& w, Side o, Side result, TargetSide t, MPI_Op op, MPI_Request* request) {
  RmaLock lock;
  if (t.rank == MPI_PROC_NULL) return make_request(w, 0, 0, request);
  const bool no_op = op == MPI_NO_OP;
  // MPI_NO_OP ignores the origin buffer: the result's layout stands in for it
  auto pp = plan_pair(w, no_op ? result : o, t);
  if (!pp) return pp.error();
  auto rplan = plan_of(result.type);
  if (!rplan) return rplan.error();
  if (rplan.value()->size * result.count != pp.value().bytes)
    return Error{MPI_ERR_TYPE, "get_accumulate: result and target datatypes hold different amounts of data"};
  if (pp.value().bytes == 0) {  // as accumulate
    if (op_index(op) < 0) return Error{MPI_ERR_OP, "one-sided accumulate with an op that is not predefined"};
    return make_request(w, t.rank, 0, request);
  }
  auto codes = accumulate_codes(o.type, t.type, op, !no_op);
  if (!codes) return codes.error();
  auto direct = direct_accumulate(w, o, &result, t, op, type_at(codes.value().first), pp.value().origin.get(),
                                  *pp.value().target, rplan.value().get(), pp.value().bytes);
  if (!direct) return direct.error();
  if (direct.value()) return make_request(w, t.rank, 0, request);
  queue_accumulate(w.peers[static_cast<size_t>(t.rank)]);
  RequestHeader h;
  h.kind = Kind::kGetAccumulate;
  h.disp = t.disp;
  h.count = t.count;
  h.element = codes.value().first;
  h.op = codes.value().second;
  const int64_t payload = no_op ? 0 : pp.value().bytes;
  auto m = compose(w, h, t.rank, pp.value().target, payload);
  if (!m) return m.error();
  if (payload > 0)
    DTMPI_TRY(pack_any(*pp.value().origin, o.count, o.buf, runtime::pointer_info(o.buf), m.value().payload()));
  DTMPI_TRY(send_request(w, t.rank, std::move(m.value().bytes), true));
  PendingReply r;
  r.plan = rplan.value();
  r.count = result.count;
  r.user = result.buf;
  r.user_info = runtime::pointer_info(result.buf);
  auto seq = expect_reply(w, t.rank, std::move(r), pp.value().bytes);
  if (!seq) return seq.error();
  return make_request(w, t.rank, seq.value(), request);
}

Status compare_and_swap(Window& w, const void* origin, const void* compare, void* result, MPI_Datatype type,
                        int target, MPI_Aint disp) {
  RmaLock lock;
  if (target == MPI_PROC_NULL) return ok_status();
  if (type_index(type) < 0) return Error{MPI_ERR_TYPE, "MPI_Compare_and_swap needs a predefined datatype"};
  auto plan = plan_of(type);
  if (!plan) return plan.error();
  const TargetSide t{target, disp, 1, type};
  DTMPI_TRY(check_target(w, t, *plan.value()));
  auto direct = direct_compare_and_swap(w, origin, compare, result, type, t, *plan.value());
  if (!direct) return direct.error();
  if (direct.value()) return ok_status();
  queue_accumulate(w.peers[static_cast<size_t>(target)]);
  const int64_t n = plan.value()->size;
  RequestHeader h;
  h.kind = Kind::kCompareSwap;
  h.disp = disp;
  h.count = 1;
  h.element = type_index(type);
  auto m = compose(w, h, target, plan.value(), 2 * n);
  if (!m) return m.error();
  DTMPI_TRY(pack_any(*plan.value(), 1, origin, runtime::pointer_info(origin), m.value().payload()));
  DTMPI_TRY(pack_any(*plan.value(), 1, compare, runtime::pointer_info(compare), m.value().payload() + n));
  DTMPI_TRY(send_request(w, target, std::move(m.value().bytes), true));
  PendingReply r;
  r.plan = plan.value();
  r.count = 1;
  r.user = result;
  r.user_info = runtime::pointer_info(result);
  auto seq = expect_reply(w, target, std::move(r), n);
  if (!seq) return seq.error();
  // the result is there when the epoch ends or a flush covers it, as a get's
  return ok_status();
}

}  // namespace dtmpi::rma
