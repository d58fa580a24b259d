// The element-wise combination of the common predefined reductions done
// here, without a call into the system MPI: MPI_Reduce_local costs a library
// call and the MPI's own op dispatch per fold, which at 8-64 bytes is most of
// a fold, and a K-nomial or recursive-doubling reduction folds on its
// critical path several times per level. Other ops and types (user ops,
// MINLOC/MAXLOC pairs, logicals, complex, ...) keep MPI_Reduce_local.
#pragma once
#include <mpi.h>

#include <cstdint>

namespace dtmpi::coll {

// inout[i] = in[i] op inout[i] (MPI_Reduce_local's operand order).
using LocalReduceFn = void (*)(const void* in, void* inout, int64_t count);

// The kernel for (op, type): SUM, PROD, MAX, MIN on the C floating and integer
// types (and BAND, BOR, BXOR on the integer ones); null otherwise.
LocalReduceFn local_reduce_for(MPI_Op op, MPI_Datatype type);

}  // namespace dtmpi::coll
