// The plan cache: MPI datatype handle -> PackPlan. A committed type is noted at
// MPI_Type_commit and its plan built by the first lookup (see registry.cpp for
// why not at commit); the entry is emptied when the type is freed. Freeing is
// observed twice: by the interposed MPI_Type_free and by an attribute delete
// callback, so types freed through paths we do not interpose (Fortran
// bindings, MPI_Finalize) never leave a stale plan behind a reused handle.
#pragma once
#include <atomic>
#include <mpi.h>

#include <cstdint>
#include <memory>

#include "type/plan.hpp"

namespace dtmpi::type {

using PlanPtr = std::shared_ptr<const PackPlan>;

// Records that `t` was committed (cheap: no MPI introspection); its plan is
// built on the first lookup.
void note_commit(MPI_Datatype t);
// note_commit and the plan built now (tools that want it at once). Null when
// the engine cannot plan the type: callers then use the system MPI.
PlanPtr commit_plan(MPI_Datatype t);
// The plan of a committed type, or null (a predefined, uncommitted or
// unplannable type); built here on the type's first lookup. The pointer stays
// valid for the calling thread until its next lookup (a thread-local cache
// holds a reference). The hot-path cost is a thread-local compare and one load
// of a generation counter.
namespace registry_detail {
// Per-thread memo of the last lookups, valid while the generation (bumped by
// every insertion or removal of an entry) is unchanged. Plain data read
// inline; the references that keep the plans alive are kept apart.
struct CacheEntry {
  MPI_Datatype type;
  uint64_t generation;  // 0: empty (the generation starts at 1)
  const PackPlan* plan;
  int64_t named_size;   // size of a predefined type; -1 derived, -2 not asked yet
  // Bytes of one element where any number of elements is one run of bytes
  // starting at the buffer, as for a predefined type: named_size, or a
  // derived type's size whose plan is such a run (MPI_Type_dup of a
  // predefined type, a contiguous type, lb 0); -1 otherwise. The fast paths
  // treat such a type as a predefined one (issue 29: a type carrying the
  // buffer-location attribute is a dup).
  int64_t run_size;
};
struct ThreadCache {
  static constexpr int kWays = 4;
  CacheEntry entries[kWays];
  int next;
};
extern __thread ThreadCache t_cache __attribute__((tls_model("initial-exec")));
extern std::atomic<uint64_t> g_generation __attribute__((visibility("hidden")));
CacheEntry& cached_entry_miss(MPI_Datatype t, uint64_t gen);
[[gnu::always_inline]] inline CacheEntry& cached_entry(MPI_Datatype t) {
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  ThreadCache& c = t_cache;
  for (auto& e : c.entries)
    if (e.generation == gen && e.type == t) return e;
  return cached_entry_miss(t, gen);
}
// cached_entry where this thread's memo has `t`, else null: never calls (the
// exported functions' fast paths, which a call would give a stack frame).
[[gnu::always_inline]] inline const CacheEntry* cached_entry_no_call(MPI_Datatype t) {
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  const ThreadCache& c = t_cache;
  for (const auto& e : c.entries)
    if (e.generation == gen && e.type == t) return &e;
  return nullptr;
}
}  // namespace registry_detail
inline const PackPlan* find_plan(MPI_Datatype t) { return registry_detail::cached_entry(t).plan; }
// One look at the memo as plain values, for a call to pass on to the parts of
// its decision instead of each asking again (issue 29). `plan` is valid as
// find_plan's is.
struct Memo {
  const PackPlan* plan;  // null: predefined, not committed, or not plannable
  int64_t named_size;    // a predefined type's size; -1 derived, -2 not asked yet (size_fast_slow asks)
  int64_t run_size;      // CacheEntry::run_size
};
[[gnu::always_inline]] inline Memo memo(MPI_Datatype t) {
  const registry_detail::CacheEntry& e = registry_detail::cached_entry(t);
  return Memo{e.plan, e.named_size, e.run_size};
}
// Whether derived types whose plan is one run (CacheEntry::run_size) may take
// the predefined types' fast paths (default yes). The host test mode, which
// stages every derived type, says no at MPI_Init, before any lookup.
void set_derived_runs_direct(bool yes);
// The size in bytes of one element of `t`, as MPI_Type_size_x says: from the
// plan or, for predefined types, remembered in the same thread-local cache
// (a host receive's decision asks it on every call: issue 29); other types
// are asked of MPI each time.
Result<int64_t> size_fast_slow(MPI_Datatype t);
inline Result<int64_t> size_fast(MPI_Datatype t) {
  const registry_detail::CacheEntry& e = registry_detail::cached_entry(t);
  if (e.plan) return e.plan->size;
  if (e.named_size >= 0) return e.named_size;
  return size_fast_slow(t);
}
// The plan as a reference the caller can keep (for asynchronous work).
PlanPtr find_plan_shared(MPI_Datatype t);
// find_plan_shared, and for predefined types (never committed, never freed) a
// plan built and cached on first use. Only for calls that need a plan (GPU
// buffers): it asks MPI about `t`.
PlanPtr plan_for(MPI_Datatype t);
// Gives `dup` the plan of `orig` (MPI_Type_dup of a committed type is committed).
void share_plan(MPI_Datatype orig, MPI_Datatype dup);
void forget_plan(MPI_Datatype t);
// MPI_Type_free calls forget_plan before the system MPI frees the handle
// (interpose/type.cpp: the handle may be reused at once by another thread).
void forget_all_plans();
size_t cached_plan_count();

// Committed types whose plans were built, and those left to the system MPI
// (types never looked up are in neither).
struct PlanCounts {
  uint64_t planned, unplanned;
};
PlanCounts plan_counts();

}  // namespace dtmpi::type
