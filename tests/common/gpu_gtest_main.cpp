// GoogleTest main for GPU tests: like mpi_gtest_main, but exits with 77
// (reported by CTest as skipped, not passed) when no usable GPU is present.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/mpi_init.hpp"

#include <cstdio>
#include <cstdlib>

#include "runtime/device.hpp"

int main(int argc, char** argv) {
  dtmpi::testing::init_mpi(&argc, &argv);
  if (!dtmpi::runtime::gpu_enabled()) {
    std::printf("no usable GPU (no driver, no device, or DTMPI_CUDA=off): GPU tests skipped\n");
    MPI_Finalize();
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
