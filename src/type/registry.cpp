#include "type/registry.hpp"

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "base/footprint.hpp"
#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "type/introspect.hpp"
#include "type/translate.hpp"

namespace dtmpi::type {
namespace {

std::atomic<bool> g_derived_runs_direct{true};  // set_derived_runs_direct

// What dtmpi knows of one committed type. A commit only inserts an entry: the
// plan is built by the first lookup that needs it, and only then does MPI get
// asked to tell us when the type dies (an attribute with a delete callback).
// Building at commit made dtmpi's MPI_Type_commit 2 to 58 times the system
// MPI's on darray, subarray and struct types, and setting the attribute there
// still cost 1.4-1.9x on Open MPI (bench/results/commit-cost-2026-11-25.txt);
// many committed types never meet a call dtmpi serves (file views, one-sided)
// and cost nothing now.
//
// Why an unwatched entry is safe: its handle can be reused only after the
// type died through a path dtmpi does not interpose (Fortran bindings), and
// the entry then belongs to whatever type the handle names next; nothing was
// built from the old one. (Were that next type never committed, dtmpi would
// serve it where the MPI reports MPI_ERR_TYPE: an erroneous program that also
// frees behind dtmpi's back.) Built entries are always watched, so a plan
// never outlives its type. Duplicates share a built plan, never an unbuilt entry.
struct Entry {
  PlanPtr plan;           // null: not built yet, or left to the system MPI
  uint64_t serial = 0;    // which commit made the entry (a build checks it is still the same)
  bool built = false;
  bool watched = false;   // on_type_delete runs when the type dies
};

struct Registry {
  // A plain mutex, not a reader-writer lock: the critical sections are a hash
  // lookup or update, lookups come only on thread-cache misses, and every
  // commit and free takes it, where pthread's rwlock cost 4 times as much.
  std::mutex mu;
  std::unordered_map<MPI_Datatype, Entry> types;
  uint64_t serials = 0;
  int keyval = MPI_KEYVAL_INVALID;
  std::once_flag keyval_once;
  std::mutex build_mu;  // one plan built at a time: a type is built once, a second thread waits for it
  std::atomic<uint64_t> planned{0}, unplanned{0};
};

Registry& reg() {
  static Registry* r = new Registry;  // never destroyed: used until process exit
  return *r;
}

int on_type_delete(MPI_Datatype t, int, void*, void*) {
  forget_plan(t);
  return MPI_SUCCESS;
}

// Asks MPI to call on_type_delete when `t` dies. Called without the lock: MPI
// may call on_type_delete from inside set_attr (replacing an old value).
void watch(MPI_Datatype t) {
  auto& r = reg();
  std::call_once(r.keyval_once, [&r] {
    if (REAL(MPI_Type_create_keyval)(MPI_TYPE_NULL_COPY_FN, on_type_delete, &r.keyval, nullptr) !=
        MPI_SUCCESS)
      r.keyval = MPI_KEYVAL_INVALID;
  });
  if (r.keyval != MPI_KEYVAL_INVALID) REAL(MPI_Type_set_attr)(t, r.keyval, nullptr);
}

// Gives `t` the entry `e`; where `t` has one already, replaces it or (keep)
// leaves it.
enum class Existing { kKeep, kReplace };
void insert(MPI_Datatype t, Entry e, Existing existing) {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  e.serial = ++r.serials;
  auto [it, inserted] = r.types.try_emplace(t, e);
  if (!inserted) {
    if (existing == Existing::kKeep) return;
    it->second = std::move(e);
  }
  registry_detail::g_generation.fetch_add(1, std::memory_order_release);
}

// The entry of `t` (a copy), or false.
bool find_entry(MPI_Datatype t, Entry& out) {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  auto it = r.types.find(t);
  if (it == r.types.end()) return false;
  out = it->second;
  return true;
}

// Builds the plan of committed type `t` (entry `serial`) from `t` itself: the
// handle in use now (a duplicate's original may be gone).
PlanPtr build(MPI_Datatype t, uint64_t serial) {
  auto& r = reg();
  std::lock_guard building(r.build_mu);
  Entry e;
  if (!find_entry(t, e) || e.serial != serial) return nullptr;  // freed meanwhile
  if (e.built) return e.plan;                                     // another thread built it
  auto built = build_plan(t);
  PlanPtr plan;
  if (built) {
    plan = std::make_shared<const PackPlan>(std::move(built.value().plan));
    r.planned.fetch_add(1, std::memory_order_relaxed);
  } else {
    DTMPI_LOG(kDebug, "no plan for datatype (%s): the system MPI handles it", built.error().what.c_str());
    r.unplanned.fetch_add(1, std::memory_order_relaxed);
  }
  bool newly_watched = false;
  {
    std::lock_guard lock(r.mu);
    auto it = r.types.find(t);
    if (it != r.types.end() && it->second.serial == serial) {
      it->second.plan = plan;
      it->second.built = true;
      newly_watched = !it->second.watched;
      it->second.watched = true;
    }
  }
  if (newly_watched) watch(t);
  return plan;
}

int64_t plan_bytes(const PackPlan& p) {
  int64_t b = static_cast<int64_t>(sizeof(PackPlan) + sizeof(AttachmentSlots));
  if (!p.is_strided()) {
    const auto& ir = p.irregular();
    b += static_cast<int64_t>(ir.pieces.capacity() * sizeof(Piece) + ir.strided.capacity() * sizeof(StridedPlan) +
                              (ir.piece_start.capacity() + ir.word_blocks.capacity()) * sizeof(int64_t));
  }
  return b;
}

// Per type, never per rank: an entry per committed type (a hash node and its
// bucket) and each built plan once, however many duplicates share it.
void report_footprint(std::vector<footprint::Part>& out) {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  const int64_t node = static_cast<int64_t>(sizeof(std::pair<const MPI_Datatype, Entry>) + 2 * sizeof(void*));
  int64_t plans = 0;
  std::unordered_set<const PackPlan*> seen;
  for (const auto& [t, e] : r.types)
    if (e.plan && seen.insert(e.plan.get()).second) plans += plan_bytes(*e.plan);
  out.push_back({"type entries", "types",
                 static_cast<int64_t>(r.types.size()) * node +
                     static_cast<int64_t>(r.types.bucket_count() * sizeof(void*)),
                 0});
  out.push_back({"type plans", "types", plans, 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

// The references behind the per-thread memo (registry.hpp: registry_detail),
// touched on misses only: the memo itself is plain data, read inline.
struct ThreadPlanRefs {
  PlanPtr plans[registry_detail::ThreadCache::kWays];
};
thread_local ThreadPlanRefs t_plan_refs;

}  // namespace

namespace registry_detail {
std::atomic<uint64_t> g_generation{1};
__thread ThreadCache t_cache __attribute__((tls_model("initial-exec"))) = {};

CacheEntry& cached_entry_miss(MPI_Datatype t, uint64_t gen) {
  ThreadCache& c = t_cache;
  const int way = c.next;
  c.next = (c.next + 1) % ThreadCache::kWays;
  CacheEntry& e = c.entries[way];
  PlanPtr& ref = t_plan_refs.plans[way];
  ref = find_plan_shared(t);
  e.plan = ref.get();
  e.type = t;
  e.generation = gen;
  e.named_size = -2;
  e.run_size = -1;
  int64_t offset = 0;
  if (e.plan && g_derived_runs_direct.load(std::memory_order_relaxed) && e.plan->lb == 0 &&
      e.plan->first_byte == 0 && e.plan->extent == e.plan->size && e.plan->contiguous_for_count(2, offset) &&
      offset == 0)
    e.run_size = e.plan->size;
  return e;
}
}  // namespace registry_detail

void note_commit(MPI_Datatype t) {
  // committing a committed type again changes nothing: its entry stays (an
  // unwatched entry of a type that died unseen is as good as a new one)
  insert(t, Entry{}, Existing::kKeep);
}

void set_derived_runs_direct(bool yes) {
  g_derived_runs_direct.store(yes, std::memory_order_relaxed);
  // memo entries made before hold the old answer: a new generation drops them
  registry_detail::g_generation.fetch_add(1, std::memory_order_acq_rel);
}

PlanPtr commit_plan(MPI_Datatype t) {
  note_commit(t);
  return find_plan_shared(t);
}

PlanPtr find_plan_shared(MPI_Datatype t) {
  Entry e;
  if (!find_entry(t, e)) return nullptr;
  return e.built ? e.plan : build(t, e.serial);
}

Result<int64_t> size_fast_slow(MPI_Datatype t) {
  registry_detail::CacheEntry& e = registry_detail::cached_entry(t);
  if (e.plan) return e.plan->size;
  if (e.named_size == -2) {
    e.named_size = -1;
    if (is_predefined(t)) {
      auto s = size_of(t);
      if (!s) return s;
      e.named_size = s.value();
      e.run_size = e.named_size;
    }
  }
  if (e.named_size >= 0) return e.named_size;
  return size_of(t);
}

PlanPtr plan_for(MPI_Datatype t) {
  Entry e;
  if (find_entry(t, e)) return e.built ? e.plan : build(t, e.serial);
  if (t == MPI_DATATYPE_NULL) return nullptr;
  if (!is_predefined(t)) return nullptr;  // a derived type without a plan: not committed, or not plannable
  auto built = build_plan(t);
  if (!built) return nullptr;
  // predefined types never die: no watch
  auto plan = std::make_shared<const PackPlan>(std::move(built.value().plan));
  insert(t, Entry{plan, 0, true, true}, Existing::kKeep);
  return plan;
}

void share_plan(MPI_Datatype orig, MPI_Datatype dup) {
  Entry e;
  if (!find_entry(orig, e)) {
    // a duplicate of a predefined type is a committed derived type (MPI-4.1
    // sec. 5.1.10): its plan is built when used (else GPU buffers of it were
    // refused with MPI_ERR_TYPE: test_gpu_pointer_kind, BufferAttribute)
    if (is_predefined(orig)) insert(dup, Entry{}, Existing::kReplace);
    return;
  }
  // (a new handle: whatever entry it has is of a type that died unseen)
  if (!e.built) {
    insert(dup, Entry{}, Existing::kReplace);  // builds its own plan when used
    return;
  }
  watch(dup);
  insert(dup, Entry{e.plan, 0, true, true}, Existing::kReplace);
}

void forget_plan(MPI_Datatype t) {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  if (r.types.erase(t)) registry_detail::g_generation.fetch_add(1, std::memory_order_release);
}

void forget_all_plans() {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  r.types.clear();
  registry_detail::g_generation.fetch_add(1, std::memory_order_release);
}

size_t cached_plan_count() {
  auto& r = reg();
  std::lock_guard lock(r.mu);
  return r.types.size();
}

PlanCounts plan_counts() {
  return PlanCounts{reg().planned.load(std::memory_order_relaxed), reg().unplanned.load(std::memory_order_relaxed)};
}

}  // namespace dtmpi::type
