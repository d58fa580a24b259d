// Predefined datatypes and operations as numbers every process agrees on.
// Handles are local to a process (Open MPI's MPI_DOUBLE and MPI_SUM are
// addresses inside libmpi, which differ between processes), so an
// accumulate's element type and op travel as indices into these tables.
#pragma once
#include <mpi.h>

#include "base/result.hpp"

namespace dtmpi::rma {

// The one predefined type `t` is made of (itself when predefined), as the
// standard requires of an accumulate's datatypes; MPI_ERR_TYPE when `t` mixes
// several predefined types or is not a type MPI can accumulate.
Result<MPI_Datatype> element_type(MPI_Datatype t);
// Index of a predefined type / op, or -1 when it is not in the table.
int type_index(MPI_Datatype t);
int op_index(MPI_Op op);
// The handle for an index; null handle for an index out of range.
MPI_Datatype type_at(int index);
MPI_Op op_at(int index);

}  // namespace dtmpi::rma
