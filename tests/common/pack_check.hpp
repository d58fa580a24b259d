// Compares dtmpi's engine with the system MPI on one (type, count).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <random>
#include <string>

namespace dtmpi::testing {

struct PackCheck {
  bool planned = false;      // the engine produced a plan
  std::string plan_text;     // describe(plan) or the reason there is none
  std::string mismatch;      // empty when everything agreed
  // The system MPI packed count > 1 elements differently from the same
  // elements packed one at a time at extent steps (which the standard makes
  // identical): a defect of that MPI. The per-element result is the oracle then.
  bool system_inconsistent = false;
};

// Packs (count, t) from a random buffer with MPI_Pack (PMPI, the oracle) and
// with the engine; if the typemap has no overlaps, also unpacks into two
// identically poisoned buffers and compares them whole (bytes outside the
// typemap must stay untouched).
PackCheck check_against_mpi(MPI_Datatype t, int count, std::mt19937_64& rng);

}  // namespace dtmpi::testing
