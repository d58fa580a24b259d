#include "type/registry.hpp"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "base/log.hpp"
#include "type/translate.hpp"

namespace dtmpi::type {
namespace {

struct Registry {
  std::shared_mutex mu;
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
}

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

PlanPtr find_plan(MPI_Datatype t) {
  auto& r = reg();
  std::shared_lock lock(r.mu);
  auto it = r.plans.find(t);
  return it == r.plans.end() ? nullptr : it->second;
}

void share_plan(MPI_Datatype orig, MPI_Datatype dup) {
  PlanPtr p = find_plan(orig);
  if (!p) return;
  watch(dup);
  store(dup, std::move(p));
}

void forget_plan(MPI_Datatype t) {
  auto& r = reg();
  std::unique_lock lock(r.mu);
  r.plans.erase(t);
}

void forget_all_plans() {
  auto& r = reg();
  std::unique_lock lock(r.mu);
  r.plans.clear();
}

size_t cached_plan_count() {
  auto& r = reg();
  std::shared_lock lock(r.mu);
  return r.plans.size();
}

}  // namespace dtmpi::type
