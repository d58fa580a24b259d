// MPI datatype -> TypeIR -> PackPlan. With type/introspect and the registry,
// the only part of the engine that talks to MPI, and only through
// introspection (envelope/contents through type/introspect, sizes, extents),
// so interposed MPI_* entry points are never re-entered.
#pragma once
#include <mpi.h>

#include <memory>

#include "base/result.hpp"
#include "type/ir.hpp"
#include "type/plan.hpp"

namespace dtmpi::type {

// The typemap of `t` as raw (uncanonicalized) IR.
Result<TypeIR> translate(MPI_Datatype t);

struct PlanBuild {
  TypeIR raw;
  TypeIR canonical;
  PackPlan plan;
};
// translate + canonicalize + compile, with size/lb/extent taken from MPI and
// the packed size cross-checked against MPI_Type_size.
Result<PlanBuild> build_plan(MPI_Datatype t);

}  // namespace dtmpi::type
