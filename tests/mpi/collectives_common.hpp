// What the collective tests of test_collectives_more share (its .cpp files
// form one binary): element types with the signature "2 doubles", filled
// buffers, and user-defined ops on them.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/mpi_world.hpp"

namespace more_collectives {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

// Element types with the signature "2 doubles": strided (3 doubles apart),
// contiguous derived, and named (MPI_DOUBLE, count doubled).
struct Types {
  MPI_Datatype strided = MPI_DATATYPE_NULL, contig = MPI_DATATYPE_NULL, vec = MPI_DATATYPE_NULL;
  Types() {
    MPI_Type_vector(1, 2, 3, MPI_DOUBLE, &vec);
    MPI_Type_create_resized(vec, 0, 3 * sizeof(double), &strided);
    MPI_Type_commit(&strided);
    MPI_Type_contiguous(2, MPI_DOUBLE, &contig);
    MPI_Type_commit(&contig);
  }
  ~Types() {
    MPI_Type_free(&strided);
    MPI_Type_free(&contig);
    MPI_Type_free(&vec);
  }
  // type k (0 strided, 1 contiguous, 2 named), its doubles per extent and count factor
  MPI_Datatype type(int k) const { return k == 0 ? strided : k == 1 ? contig : MPI_DOUBLE; }
  static int width(int k) { return k == 0 ? 3 : 2; }  // doubles per logical element
  static int factor(int k) { return k == 2 ? 2 : 1; }
};

inline std::vector<double> filled(size_t n, int me, int salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = me * 1e6 + salt * 1e4 + static_cast<double>(i);
  return v;
}

// type combinations (send kind, receive kind) tried by each test
inline constexpr int kCombos[][2] = {{0, 1}, {1, 0}, {0, 0}, {2, 0}, {0, 2}};

// A user-defined op (max of absolute values) on doubles.
// Elements of 2 doubles laid out as the type says (MPI hands user ops the
// user's layout, gaps included).
inline int doubles_apart(MPI_Datatype* t) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(*t, &lb, &extent);
  return static_cast<int>(extent / static_cast<MPI_Aint>(sizeof(double)));
}
inline void absmax(void* in, void* inout, int* len, MPI_Datatype* t) {
  auto* a = static_cast<double*>(in);
  auto* b = static_cast<double*>(inout);
  const int w = doubles_apart(t);
  for (int i = 0; i < *len; ++i)
    for (int k = 0; k < 2; ++k) b[i * w + k] = std::max(std::abs(a[i * w + k]), std::abs(b[i * w + k]));
}
// A sum as a user-defined op: MPI's predefined ops take only predefined
// types (Open MPI refuses derived ones), and the host test mode stages
// derived types only; predefined ops on GPU memory are tested on the GPU.
inline void sum2(void* in, void* inout, int* len, MPI_Datatype* t) {
  auto* a = static_cast<double*>(in);
  auto* b = static_cast<double*>(inout);
  const int w = doubles_apart(t);
  for (int i = 0; i < *len; ++i)
    for (int k = 0; k < 2; ++k) b[i * w + k] += a[i * w + k];
}

}  // namespace more_collectives
