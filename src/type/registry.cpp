#include "type/registry.hpp"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "base/log.hpp"
#include "type/introspect.hpp"
#include "type/translate.hpp"

namespace dtmpi::type {
namespace {

struct Registry {
  std::shared_mutex mu;
  std::atomic<uint64_t> generation{1};  // bumped by every change of `plans`
  std::unordered_map<MPI_Datatype, PlanPtr> plans;
  int keyval = MPI_KEYVAL_INVALID;
  std::once_flag keyval_once;
};

Registry& reg() {
  static Registry* r = new Registry;  // never destroyed: used until process exit
  return *r;
}

int on_type_delete(MPI_Datatype t, int, void*, void*) {
  forget_plan(t);
  return MPI_SUCCESS;
}

// Marks `t` so that MPI tells us when it is destroyed. Called without the lock:
// MPI may call on_type_delete from inside set_attr (replacing an old value).
void watch(MPI_Datatype t) {
  auto& r = reg();
  std::call_once(r.keyval_once, [&r] {
    if (PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, on_type_delete, &r.keyval, nullptr) !=
        MPI_SUCCESS)
      r.keyval = MPI_KEYVAL_INVALID;
  });
  if (r.keyval != MPI_KEYVAL_INVALID) PMPI_Type_set_attr(t, r.keyval, nullptr);
}

void store(MPI_Datatype t, PlanPtr p) {
  auto& r = reg();
  std::unique_lock lock(r.mu);
  r.plans[t] = std::move(p);
  r.generation.fetch_add(1, std::memory_order_release);
}

// Per-thread memo of the last lookups, valid while the generation is unchanged.
struct ThreadCache {
  static constexpr int kWays = 4;
  struct Entry {
    MPI_Datatype type{};
    uint64_t generation = 0;
    PlanPtr plan;
  } entries[kWays];
  int next = 0;
};
// initial-exec: no __tls_get_addr call on the hot path (libdtmpi is loaded at start)
__attribute__((tls_model("initial-exec"))) thread_local ThreadCache t_cache;

}  // namespace

PlanPtr commit_plan(MPI_Datatype t) {
  auto built = build_plan(t);
  watch(t);  // may drop an older plan of t through the delete callback
  if (!built) {
    DTMPI_LOG(kDebug, "no plan for datatype (%s): the system MPI handles it",
              built.error().what.c_str());
    forget_plan(t);
    return nullptr;
  }
  auto p = std::make_shared<const PackPlan>(std::move(built.value().plan));
  store(t, p);
  return p;
}

PlanPtr find_plan_shared(MPI_Datatype t) {
  auto& r = reg();
  std::shared_lock lock(r.mu);
  auto it = r.plans.find(t);
  return it == r.plans.end() ? nullptr : it->second;
}

const PackPlan* find_plan(MPI_Datatype t) {
  const uint64_t gen = reg().generation.load(std::memory_order_acquire);
  auto& c = t_cache;
  for (auto& e : c.entries)
    if (e.generation == gen && e.type == t) return e.plan.get();
  auto& e = c.entries[c.next];
  c.next = (c.next + 1) % ThreadCache::kWays;
  e.plan = find_plan_shared(t);
  e.type = t;
  e.generation = gen;
  return e.plan.get();
}

PlanPtr plan_for(MPI_Datatype t) {
  if (PlanPtr p = find_plan_shared(t)) return p;
  if (t == MPI_DATATYPE_NULL) return nullptr;
  if (!is_predefined(t)) return nullptr;  // a derived type without a plan: not committed, or not plannable
  auto built = build_plan(t);
  if (!built) return nullptr;
  auto p = std::make_shared<const PackPlan>(std::move(built.value().plan));
  store(t, p);
  return p;
}

void share_plan(MPI_Datatype orig, MPI_Datatype dup) {
  PlanPtr p = find_plan_shared(orig);
  if (!p) return;
  watch(dup);
  store(dup, std::move(p));
}

void forget_plan(MPI_Datatype t) {
  auto& r = reg();
  std::unique_lock lock(r.mu);
  if (r.plans.erase(t)) r.generation.fetch_add(1, std::memory_order_release);
}

void forget_all_plans() {
  auto& r = reg();
  std::unique_lock lock(r.mu);
  r.plans.clear();
  r.generation.fetch_add(1, std::memory_order_release);
}

size_t cached_plan_count() {
  auto& r = reg();
  std::shared_lock lock(r.mu);
  return r.plans.size();
}

}  // namespace dtmpi::type
