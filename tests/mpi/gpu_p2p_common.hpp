// What the GPU point-to-point tests share (test_gpu_p2p.cpp,
// test_gpu_p2p_batched.cpp): the fixture, buffers and patterns.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/dtmpi_stats.hpp"

namespace gpu_p2p {

inline int self_rank() {
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  return me;
}

// Rank i uses device i modulo the devices present: two GPUs, two ranks.
class GpuP2P : public ::testing::Test {
 protected:
  void SetUp() override {
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    ASSERT_EQ(cudaSetDevice(self_rank() % ndev), cudaSuccess);
  }
};

// Test buffers: device memory, or managed memory when DTMPI_TEST_USER_MANAGED=1
// (the CUDA-aware variant: a system MPI that is not CUDA-aware can read managed
// memory, so it stands in for one that is -- see DTMPI_TEST_MANAGED_POOL).
inline cudaError_t gpu_alloc(char** p, size_t n) {
  const char* m = std::getenv("DTMPI_TEST_USER_MANAGED");
  if (m && std::string(m) == "1") return cudaMallocManaged(reinterpret_cast<void**>(p), n);
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}

inline std::vector<char> pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>(seed * 31 + i * 7 + (i >> 9));
  return v;
}

}  // namespace gpu_p2p

using gpu_p2p::GpuP2P;
using gpu_p2p::gpu_alloc;
using gpu_p2p::pattern;
using gpu_p2p::self_rank;
using dtmpi::testing::stat_value;
