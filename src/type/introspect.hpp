// Every question dtmpi asks the system MPI about a user's datatype goes through
// here. Where the MPI has the MPI-4 large-count introspection
// (DTMPI_HAVE_MPI_LARGE_COUNT, found at configure time), it is used: MPICH 4
// refuses the classic MPI_Type_get_envelope/_contents on a type built by an
// MPI_Type_*_c constructor, and under the default error handler that refusal
// aborts the program. Elsewhere (Open MPI 4.1) the classic calls are all there
// is, and no type can have large counts.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "base/result.hpp"

namespace dtmpi::type {

// The constructor arguments of a derived datatype in the classic layout of
// MPI_Type_get_contents (MPI-3.1 section 4.1.13), every integer widened to 64
// bits. Large-count contents (MPI-4: counts and displacements in
// array_of_large_counts) are rearranged into that layout, so readers know one
// layout only, e.g. for MPI_COMBINER_HVECTOR ints = {count, blocklength} and
// addrs = {stride} whichever constructor made the type.
struct Contents {
  int combiner = MPI_COMBINER_NAMED;
  std::vector<int64_t> ints;
  std::vector<int64_t> addrs;
  std::vector<MPI_Datatype> types;  // the MPI's references: freed with this object unless predefined

  Contents() = default;
  Contents(const Contents&) = delete;
  Contents& operator=(const Contents&) = delete;
  Contents(Contents&& o) noexcept : combiner(o.combiner), ints(std::move(o.ints)), addrs(std::move(o.addrs)),
                                    types(std::move(o.types)) {
    o.types.clear();
  }
  Contents& operator=(Contents&&) = delete;
  ~Contents();
};

// The combiner of `t` (MPI_COMBINER_NAMED for predefined types).
Result<int> combiner_of(MPI_Datatype t);
// True for a predefined datatype; false for derived ones and on any error.
bool is_predefined(MPI_Datatype t);
// The contents of `t`; for a predefined type only the combiner is set.
Result<Contents> contents_of(MPI_Datatype t);
// MPI_Type_size in 64 bits (the int form says MPI_UNDEFINED past 2^31 - 1).
Result<int64_t> size_of(MPI_Datatype t);

}  // namespace dtmpi::type
