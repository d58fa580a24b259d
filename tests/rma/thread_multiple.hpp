// The programs of this folder that need MPI_THREAD_MULTIPLE (dtmpi's
// progress thread, threads of their own): MPI_Init_thread asking for it;
// where the MPI does not provide it, rank 0 says so and the program ends with
// 77, which CTest reports as skipped (SKIP_RETURN_CODE), not passed.
#pragma once
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

inline void init_thread_multiple_or_skip(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided == MPI_THREAD_MULTIPLE) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("MPI_THREAD_MULTIPLE not provided: skipped\n");
  MPI_Finalize();
  std::exit(77);
}
