// What the differential tests of the data-moving collectives share
// (coll_more_differential.cpp, coll_v_differential.cpp): the type pairs of
// one block, random bytes, the iteration count, and the check that dtmpi's
// algorithm served a named operation.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "coll_common.hpp"

namespace coll_test {

// A send type and a receive type of one block: `sk` of `st` carry the bytes
// of `rk` of `rt`.
struct Pair {
  MPI_Datatype st;
  int sk;
  MPI_Datatype rt;
  int rk;
};

inline MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(t, &lb, &extent);
  return extent;
}

inline std::vector<char> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<char> v(n);
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

struct Types {
  MPI_Datatype vec = MPI_DATATYPE_NULL, pair = MPI_DATATYPE_NULL, spaced = MPI_DATATYPE_NULL;
  std::vector<Pair> pairs;
  Types() {
    MPI_Type_vector(3, 2, 5, MPI_INT, &vec);  // non-contiguous: packed (6 ints, extent 12 ints)
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    // an int every 16 bytes: one of them lies where it is (a block of count
    // 1 is the user's bytes), more are packed
    MPI_Type_create_resized(MPI_INT, 0, 16, &spaced);
    MPI_Type_commit(&spaced);
    pairs = {{MPI_CHAR, 1, MPI_CHAR, 1}, {MPI_DOUBLE, 1, MPI_DOUBLE, 1}, {pair, 1, MPI_DOUBLE, 2},
             {vec, 1, MPI_INT, 6},       {MPI_INT, 6, vec, 1},            {vec, 1, vec, 1},
             {spaced, 1, MPI_INT, 1},    {MPI_INT, 1, spaced, 1}};
  }
  ~Types() {
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    MPI_Type_free(&spaced);
  }
};

// Iterations per communicator: fewer where ranks outnumber the CI machine's
// cores by far (7-8 ranks on 2 cores, every flag wait a context switch), and
// under MPICH with more ranks than cores (coll_test::iterations).
inline int iterations() {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  return coll_test::iterations(world > 4 ? 20 : 60);
}

inline int64_t random_count(int it, std::mt19937& rng) {
  if (it % 10 == 9) return 3000 + rng() % 12000;  // past a scratch slot (chunks)
  if (it % 10 == 4) return 0;
  return rng() % 600;
}

// Whether DTMPI_COLL names an algorithm of dtmpi's for `op`.
inline bool named(const std::string& op) {
  const char* v = std::getenv("DTMPI_COLL");
  const std::string s = "," + std::string(v ? v : "") + ",";
  const size_t at = s.find("," + op + ":");
  return at != std::string::npos && s.compare(at + op.size() + 2, 7, "system,") != 0;
}

// Checks, at the end of a test of `op`, that dtmpi's algorithm served some of its calls where named.
struct ServedCheck {
  std::string op;
  long long before = served_by_dtmpi();
  ~ServedCheck() {
    if (named(op)) {
      EXPECT_GT(served_by_dtmpi(), before) << "DTMPI_COLL names " << op << " but dtmpi served none";
    }
  }
};

}  // namespace coll_test
