// What the differential tests of dtmpi's collectives share: the
// communicators under test, a random stream common to a communicator, the
// inputs of reductions and the count of calls dtmpi's algorithms served.
#pragma once
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

extern "C" const char* dtmpi_stats(void) __attribute__((weak));

namespace coll_test {

inline long long served_by_dtmpi() {
  const char* s = dtmpi_stats ? dtmpi_stats() : nullptr;
  const char* at = s ? std::strstr(s, "dtmpi's collective algorithms ") : nullptr;
  return at ? std::atoll(at + std::strlen("dtmpi's collective algorithms ")) : -1;
}

// Iterations of a random loop: `normal`, or a third of it (at least 10)
// where ranks outnumber the cores under MPICH -- its busy polling makes each of
// the system MPI's collectives the test compares against cost a scheduler
// time slice (~8 ms) there, so CI's 2 cores ran these tests for minutes; the
// GPU machine's 16 cores run every iteration. Every rank gets the same
// answer (the world's size and the library are the same everywhere; the
// core count is the node's, and these tests run on one node).
//
// Under the sanitizers (DTMPI_TEST_SANITIZE=ON, set by CTest for that build)
// a quarter, at least 10: their job is the memory of each path, and the
// iterations' shapes (it % 10: small, inline, chunked) all come round by the
// tenth; the plain builds run every iteration for the data. CI's sanitizer
// run of the collective tests took ~12 of its 58 minutes before. MPICH's
// sanitizer run with more ranks than cores: the ten shapes once (CI's one
// MPICH build is that one since session 23; Open MPI's runs every iteration).
inline int iterations(int normal) {
  int world = 0, len = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  MPI_Get_library_version(version, &len);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const bool slow = std::strstr(version, "MPICH") != nullptr && world > cores;
  const char* sanitize = std::getenv("DTMPI_TEST_SANITIZE");
  // both (MPICH's sanitizer run with more ranks than cores): the ten shapes once
  if (sanitize && std::strcmp(sanitize, "ON") == 0) return slow ? std::min(normal, 10) : std::max(10, normal / 4);
  return slow ? std::max(10, normal / 3) : normal;
}

// The communicators under test: the world, halves split by parity (odd sizes,
// 1 rank), and the world in reversed rank order.
inline std::vector<MPI_Comm> comms() {
  std::vector<MPI_Comm> out{MPI_COMM_WORLD};
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm half = MPI_COMM_NULL, rev = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &rev);
  out.push_back(half);
  out.push_back(rev);
  return out;
}
inline void free_comms(std::vector<MPI_Comm>& c) {
  for (size_t i = 1; i < c.size(); ++i) MPI_Comm_free(&c[i]);
}

// The same random stream on every rank of `comm` (seeded from rank 0).
inline std::mt19937 shared_rng(MPI_Comm comm, unsigned salt) {
  unsigned seed = static_cast<unsigned>(std::random_device{}()) ^ salt;
  PMPI_Bcast(&seed, 1, MPI_UNSIGNED, 0, comm);
  return std::mt19937(seed);
}

struct TypeCase {
  MPI_Datatype type;
  size_t elem;  // bytes of one element's span in the buffer (extent)
  bool integer;
};

// Fills `n` elements of a case with small integer values (exact in floating
// point whatever the order of a sum), distinct per rank.
inline void fill(std::vector<char>& buf, const TypeCase& t, int64_t count, std::mt19937& rng) {
  buf.assign(static_cast<size_t>(count) * t.elem + 16, 0);
  std::uniform_int_distribution<int> d(1, 3);
  if (t.type == MPI_DOUBLE) {
    for (int64_t i = 0; i < count; ++i) reinterpret_cast<double*>(buf.data())[i] = d(rng);
  } else if (t.type == MPI_FLOAT) {
    for (int64_t i = 0; i < count; ++i) reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(d(rng));
  } else if (t.type == MPI_INT) {
    for (int64_t i = 0; i < count; ++i) reinterpret_cast<int*>(buf.data())[i] = d(rng) * (i % 2 ? -1 : 1);
  } else if (t.type == MPI_LONG_LONG) {
    for (int64_t i = 0; i < count; ++i) reinterpret_cast<long long*>(buf.data())[i] = static_cast<long long>(d(rng)) << (i % 40);
  } else if (t.type == MPI_2INT) {
    for (int64_t i = 0; i < 2 * count; ++i) reinterpret_cast<int*>(buf.data())[i] = d(rng);
  } else {
    for (auto& c : buf) c = static_cast<char>(d(rng));
  }
}

// 2x2 matrices of uint32 (mod 2^32): associative, not commutative.
inline void matmul(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<uint32_t*>(in);
  auto* b = static_cast<uint32_t*>(inout);
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    const uint32_t r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                           a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, r, sizeof r);
  }
}

struct Reduction {
  TypeCase t;
  MPI_Op op;
};

}  // namespace coll_test
