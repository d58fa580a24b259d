// The plan cache: MPI datatype handle -> PackPlan, filled at MPI_Type_commit and
// emptied when the type is freed. Freeing is observed twice: by the interposed
// MPI_Type_free and by an attribute delete callback, so types freed through
// paths we do not interpose (Fortran bindings, MPI_Finalize) never leave a
// stale plan behind a reused handle.
#pragma once
#include <mpi.h>

#include <memory>

#include "type/plan.hpp"

namespace dtmpi::type {

using PlanPtr = std::shared_ptr<const PackPlan>;

// Builds and caches the plan of a committed type. Returns null (and caches
// nothing) when the engine cannot plan it: callers then use the system MPI.
PlanPtr commit_plan(MPI_Datatype t);
// The cached plan, or null; the pointer stays valid for the calling thread
// until its next lookup (a thread-local cache holds a reference). The hot-path
// cost is a thread-local compare and one load of a generation counter.
const PackPlan* find_plan(MPI_Datatype t);
// The cached plan as a reference the caller can keep (for asynchronous work).
PlanPtr find_plan_shared(MPI_Datatype t);
// find_plan_shared, and for predefined types (never committed, never freed) a
// plan built and cached on first use. Only for calls that need a plan (GPU
// buffers): it asks MPI about `t`.
PlanPtr plan_for(MPI_Datatype t);
// Gives `dup` the plan of `orig` (MPI_Type_dup of a committed type is committed).
void share_plan(MPI_Datatype orig, MPI_Datatype dup);
void forget_plan(MPI_Datatype t);
void forget_all_plans();
size_t cached_plan_count();

}  // namespace dtmpi::type
