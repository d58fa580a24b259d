// Random MPI datatypes for differential tests: every constructor, nested to a
// given depth, with negative strides/displacements, zero counts and lengths,
// resized bounds. Reproducible from the seed.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dtmpi::testing {

class RandomTypes {
 public:
  explicit RandomTypes(uint64_t seed) : rng_(seed) {}
  // An uncommitted derived type (or a named one); the caller commits and frees.
  MPI_Datatype make(int depth);
  // Human-readable construction of the last type made.
  const std::string& recipe() const { return recipe_; }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937_64& rng() { return rng_; }

 private:
  MPI_Datatype named();
  MPI_Datatype derived(int depth, std::string& text);
  std::mt19937_64 rng_;
  std::string recipe_;
};

// Byte span a typemap of `count` elements touches relative to the buffer start.
struct Span {
  int64_t lo, hi;
};
Span span_of(MPI_Datatype t, int count);
void free_type(MPI_Datatype& t);  // frees unless named

// Source byte offset of every packed byte of (count, t), by the system MPI's
// MPI_Pack (the oracle recipe of the datatype digest, 3 byte planes).
std::vector<int64_t> typemap_offsets(MPI_Datatype t, int count);

}  // namespace dtmpi::testing
