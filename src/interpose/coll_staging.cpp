#include "interpose/coll_staging.hpp"

#include "coll/coll.hpp"

#include <mutex>
#include <unordered_map>

#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "transport/peers.hpp"
#include "transport/staging.hpp"
#include "transport/transfer.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;

namespace dtmpi::interpose {

Pieces uniform_side(const void* buf, int n, int count, MPI_Datatype type) {
  if (buf == MPI_IN_PLACE) return Pieces{buf, {}, {}, {}};  // the other arguments are ignored
  Pieces p{buf, std::vector<int>(static_cast<size_t>(n), count), std::vector<int64_t>(static_cast<size_t>(n), 0),
           std::vector<MPI_Datatype>(static_cast<size_t>(n), type)};
  if (count <= 0) return p;
  MPI_Aint lb = 0, extent = 0;
  REAL(MPI_Type_get_extent)(type, &lb, &extent);
  for (int i = 0; i < n; ++i) p.displs[static_cast<size_t>(i)] = int64_t{i} * count * extent;
  return p;
}

Pieces v_side(const void* buf, int n, const int* counts, const int* displs, MPI_Datatype type) {
  if (buf == MPI_IN_PLACE) return Pieces{buf, {}, {}, {}};
  Pieces p{buf, std::vector<int>(counts, counts + n), std::vector<int64_t>(static_cast<size_t>(n), 0),
           std::vector<MPI_Datatype>(static_cast<size_t>(n), type)};
  MPI_Aint lb = 0, extent = 0;
  REAL(MPI_Type_get_extent)(type, &lb, &extent);
  for (int i = 0; i < n; ++i) p.displs[static_cast<size_t>(i)] = int64_t{displs[i]} * extent;
  return p;
}

namespace {

bool same_memory(const rt::PointerInfo& a, const rt::PointerInfo& b) {
  return a.kind == b.kind && a.device == b.device;
}

}  // namespace

bool collective_takes_device_memory(coll::CollOpKind op) { return tp::mpi_takes_device_memory() && !coll::enabled(op); }

bool may_stage_side(const Pieces& p) {
  if (p.buf == MPI_IN_PLACE) return false;
  MPI_Datatype asked = MPI_DATATYPE_NULL;
  for (int i = 0; i < p.size(); ++i) {
    const MPI_Datatype t = p.types[static_cast<size_t>(i)];
    if (p.counts[static_cast<size_t>(i)] <= 0 || t == asked) continue;
    if (may_stage(t)) return true;
    asked = t;
  }
  return false;
}

// Whether `p` must be staged; fills plans and memory. Each distinct type is
// asked once (a v side asks once) -- except with MPI_BOTTOM, where absolute
// displacements may reach several memories and every piece is asked.
bool needs_staging(const Pieces& p, Staged& s, HostPacking host, bool device_taken) {
  if (p.buf == MPI_IN_PLACE) return false;
  const bool every_piece = p.buf == MPI_BOTTOM;
  bool stage = false;
  MPI_Datatype asked = MPI_DATATYPE_NULL;
  const int n = p.size();
  if (every_piece) s.infos.resize(static_cast<size_t>(n));
  for (int i = 0; i < n && (every_piece || !stage); ++i) {
    const MPI_Datatype t = p.types[static_cast<size_t>(i)];
    if (p.counts[static_cast<size_t>(i)] <= 0 || (!every_piece && t == asked)) continue;
    asked = t;
    tp::UserBuffer b;
    const int c = p.counts[static_cast<size_t>(i)];
    const bool must = must_stage(p.piece(i), c, t, b, host, nullptr, device_taken);
    if (b.refused) {
      s.refused = b.refused;
      return true;
    }
    if (every_piece) s.infos[static_cast<size_t>(i)] = b.info;
    if (must && !stage) {
      stage = true;
      s.info = b.info;
    }
  }
  if (!stage) return false;
  if (every_piece) {  // one memory after all: the batched path
    bool mixed = false;
    for (int i = 0; i < n; ++i)
      if (p.counts[static_cast<size_t>(i)] > 0 && !same_memory(s.infos[static_cast<size_t>(i)], s.info)) mixed = true;
    if (!mixed) s.infos.clear();
  }
  s.plans.resize(static_cast<size_t>(n));
  MPI_Datatype planned = MPI_DATATYPE_NULL;
  type::PlanPtr plan;
  for (int i = 0; i < n; ++i) {
    if (p.counts[static_cast<size_t>(i)] <= 0) continue;
    const MPI_Datatype t = p.types[static_cast<size_t>(i)];
    if (t != planned || !plan) {
      plan = type::plan_for(t);
      planned = t;
    }
    if (!plan) {  // a type dtmpi cannot plan: the system MPI takes it all, unless it is on the GPU
      if (!rt::on_gpu(s.info) || device_taken) return false;
      s.refused = MPI_ERR_TYPE;
      return true;
    }
    s.plans[static_cast<size_t>(i)] = plan;
  }
  return true;
}

std::vector<dtmpi::pack::PieceRef> piece_refs(const Pieces& p, const Staged& s, InPlace only) {
  std::vector<dtmpi::pack::PieceRef> refs;
  for (int i = 0; i < p.size(); ++i) {
    if (p.counts[static_cast<size_t>(i)] <= 0) continue;
    if (only.kind == InPlace::kOne && i != only.piece) continue;
    refs.push_back({s.plans[static_cast<size_t>(i)].get(), p.counts[static_cast<size_t>(i)], p.piece(i),
                    s.byte_displs[static_cast<size_t>(i)]});
  }
  return refs;
}

namespace {

// Pieces of one side in several memories (MPI_BOTTOM): one pack call each.
Status pack_mixed(const Pieces& p, Staged& s, bool pack) {
  for (int i = 0; i < p.size(); ++i) {
    if (p.counts[static_cast<size_t>(i)] <= 0) continue;
    rt::Staging piece = s.staging;
    piece.ptr = static_cast<char*>(s.staging.ptr) + s.byte_displs[static_cast<size_t>(i)];
    const auto& plan = *s.plans[static_cast<size_t>(i)];
    const auto& info = s.infos[static_cast<size_t>(i)];
    auto ok = pack ? tp::stage_out(plan, p.counts[static_cast<size_t>(i)], p.piece(i), info, piece, false)
                   : tp::stage_in(plan, p.counts[static_cast<size_t>(i)], piece, p.piece(i), info, false);
    if (!ok)
      return Error{MPI_ERR_OTHER,
                   std::string(pack ? "packing" : "unpacking") + " a collective's pieces failed: " + ok.error().what};
  }
  return ok_status();
}

// Committed contiguous types of packed sizes, cached until MPI_Finalize.
struct PackedTypes {
  std::mutex mu;
  std::unordered_map<int64_t, MPI_Datatype> types;
};
PackedTypes& packed_types() {
  static auto* t = new PackedTypes;  // never destroyed: MPI calls may come from static destructors
  return *t;
}

// A committed contiguous type of `size` bytes (cached).
Result<MPI_Datatype> packed_type(int64_t size) {
  auto& [mu, types] = packed_types();
  std::lock_guard lock(mu);
  auto it = types.find(size);
  if (it != types.end()) return it->second;
  MPI_Datatype t = MPI_DATATYPE_NULL;
  DTMPI_MPI_CHECK(REAL(MPI_Type_contiguous)(static_cast<int>(size), MPI_BYTE, &t));
  DTMPI_MPI_CHECK(REAL(MPI_Type_commit)(&t));
  types.emplace(size, t);
  return t;
}

}  // namespace

// Freed before the system MPI's MPI_Finalize, which reports types still
// alive (MPICH: "yaksa: N leaked handle pool objects").
void free_packed_types() {
  auto& [mu, types] = packed_types();
  std::lock_guard lock(mu);
  for (auto& [size, t] : types) REAL(MPI_Type_free)(&t);
  types.clear();
}

namespace {

// Lays the pieces out in one staging buffer, packing those `pack` names.
Status stage(const Pieces& p, InPlace pack, Staged& s) {
  DTMPI_TRY(layout(p, s));
  auto st = rt::acquire_staging(static_cast<size_t>(s.total));
  if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a collective: " + st.error().what};
  s.staging = st.value();
  if (pack.kind == InPlace::kNone || s.total == 0) return ok_status();
  if (!s.infos.empty()) return pack_mixed(p, s, true);
  const auto refs = piece_refs(p, s, pack);
  auto ok = tp::stage_out_pieces(refs.data(), refs.size(), s.info, s.staging, s.total, s.total > tp::kOneShotLimit);
  if (!ok) return Error{MPI_ERR_OTHER, "packing a collective's pieces failed: " + ok.error().what};
  return ok_status();
}

}  // namespace

Status layout(const Pieces& p, Staged& s) {
  const size_t n = static_cast<size_t>(p.size());
  s.counts.assign(n, 0);
  s.displs.assign(n, 0);
  s.byte_displs.assign(n, 0);
  s.types.assign(n, MPI_BYTE);
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    s.byte_displs[i] = static_cast<int>(total);
    if (p.counts[i] <= 0) continue;
    const int64_t size = s.plans[i]->size;
    const int64_t bytes = int64_t{p.counts[i]} * size;
    if (size > INT32_MAX || bytes > INT32_MAX || total + bytes > INT32_MAX) return Error{MPI_ERR_COUNT, ""};
    s.counts[i] = p.counts[i];
    s.displs[i] = size > 0 ? static_cast<int>(total / size) : 0;
    auto t = packed_type(size);
    if (!t) return Error{MPI_ERR_INTERN, "no packed type for a collective: " + t.error().what};
    s.types[i] = t.value();
    total += bytes;
  }
  s.total = total;
  return ok_status();
}

namespace {

Status unstage(const Pieces& p, Staged& s) {
  if (s.total == 0) return ok_status();
  if (!s.infos.empty()) return pack_mixed(p, s, false);
  const auto refs = piece_refs(p, s, InPlace::none());
  auto ok = tp::stage_in_pieces(refs.data(), refs.size(), s.staging, s.info, s.total, s.total > tp::kOneShotLimit);
  if (!ok) return Error{MPI_ERR_OTHER, "unpacking a collective's pieces failed: " + ok.error().what};
  return ok_status();
}

}  // namespace

MPI_Datatype Staged::type() const {
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) return types[i];
  return MPI_BYTE;
}

Status StagedCall::finish() { return stage_recv ? unstage(recv, rs) : ok_status(); }

Result<bool> prepare(StagedCall& c, InPlace in_place) {
  c.stage_send = needs_staging(c.send, c.ss, HostPacking::kWhereBetter, c.device_taken);
  c.stage_recv = needs_staging(c.recv, c.rs, receive_packing(), c.device_taken);  // host sides as point-to-point receives
  if (!c.stage_send && !c.stage_recv) return false;
  if (const int refused = c.stage_send && c.ss.refused ? c.ss.refused : c.stage_recv ? c.rs.refused : 0)
    return Error{refused, std::string("a collective on a GPU buffer ") +
                              (refused == MPI_ERR_COUNT ? "of more than 2 GiB" : "whose datatype dtmpi cannot plan") +
                              (tp::mpi_takes_device_memory()
                                   ? ": dtmpi's collectives (DTMPI_COLL) copy host memory only"
                                   : ": the system MPI is not CUDA-aware")};
  rt::count(rt::Counter::kStagedCollectives);
  if (c.stage_send) DTMPI_TRY(stage(c.send, InPlace::all(), c.ss));
  if (c.stage_recv) DTMPI_TRY(stage(c.recv, in_place, c.rs));
  return true;
}

Status complete(std::shared_ptr<tp::Completion> c, MPI_Request* request, Status called) {
  DTMPI_TRY(called);  // the system MPI has reported it
  if (!request) return c->finish();
  tp::PendingOp op;
  op.kind = tp::PendingOp::Kind::kCompletion;
  op.completion = std::move(c);
  tp::ledger::track(*request, std::move(op));
  return ok_status();
}

int peers_of(MPI_Comm comm) {
  int n = 0, inter = 0;
  REAL(MPI_Comm_test_inter)(comm, &inter);
  if (inter)
    REAL(MPI_Comm_remote_size)(comm, &n);
  else
    REAL(MPI_Comm_size)(comm, &n);
  return n;
}

bool neighbor_counts(MPI_Comm comm, int& in, int& out) {
  int kind = MPI_UNDEFINED;
  REAL(MPI_Topo_test)(comm, &kind);
  int weighted = 0;
  if (kind == MPI_DIST_GRAPH) return DTMPI_MPI_WARN(REAL(MPI_Dist_graph_neighbors_count)(comm, &in, &out, &weighted));
  if (kind == MPI_CART) {
    int nd = 0;
    REAL(MPI_Cartdim_get)(comm, &nd);
    in = out = 2 * nd;
    return true;
  }
  if (kind == MPI_GRAPH) {
    int me = 0;
    REAL(MPI_Comm_rank)(comm, &me);
    REAL(MPI_Graph_neighbors_count)(comm, me, &in);
    out = in;
    return true;
  }
  return false;
}

}  // namespace dtmpi::interpose
