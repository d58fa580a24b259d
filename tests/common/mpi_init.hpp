// MPI_Init of the test mains (mpi_gtest_main, gpu_gtest_main).
#pragma once
#include <mpi.h>

#include <cstdlib>

namespace dtmpi::testing {

// DTMPI_TEST_THREADS=1: initialize for MPI_THREAD_MULTIPLE (tests that use
// threads skip themselves when the system MPI does not provide it).
inline void init_mpi(int* argc, char*** argv) {
  const char* threads = std::getenv("DTMPI_TEST_THREADS");
  if (threads && threads[0] == '1') {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(argc, argv);
  }
}

}  // namespace dtmpi::testing
