// The type memo's "one run of bytes" answer (type::CacheEntry::run_size):
// the exported point-to-point fast paths take a type with run_size >= 0 as
// they take a predefined one, handing the buffer to the system MPI as it is
// (issue 29: a type carrying the buffer-location attribute is an
// MPI_Type_dup). Wrong here means a non-contiguous or shifted type skipping
// dtmpi's staging of GPU data, so every shape that is not one run from the
// buffer's start must say -1.
#include <gtest/gtest.h>
#include <mpi.h>

#include "type/registry.hpp"

namespace {

namespace ty = dtmpi::type;

// `t` committed as the interposed MPI_Type_commit would note it.
MPI_Datatype noted(MPI_Datatype t) {
  MPI_Type_commit(&t);
  ty::note_commit(t);
  return t;
}

int64_t run_size(MPI_Datatype t) {
  (void)ty::size_fast(t);  // a predefined type's size is learned by the first ask
  return ty::memo(t).run_size;
}

TEST(RegistryMemo, OneRunOfBytes) {
  MPI_Datatype dup_int, contig, vec_dense, one_block;
  MPI_Type_dup(MPI_INT, &dup_int);
  MPI_Type_contiguous(5, MPI_DOUBLE, &contig);
  MPI_Type_vector(3, 2, 2, MPI_INT, &vec_dense);  // stride == block: contiguous
  const int len = 4;
  const MPI_Aint at = 0;
  MPI_Type_create_hindexed(1, &len, &at, MPI_SHORT, &one_block);
  for (MPI_Datatype* t : {&dup_int, &contig, &vec_dense, &one_block}) *t = noted(*t);
  EXPECT_EQ(run_size(MPI_INT), static_cast<int64_t>(sizeof(int)));
  EXPECT_EQ(run_size(MPI_BYTE), 1);
  EXPECT_EQ(run_size(dup_int), static_cast<int64_t>(sizeof(int)));
  EXPECT_EQ(run_size(contig), 5 * static_cast<int64_t>(sizeof(double)));
  EXPECT_EQ(run_size(vec_dense), 6 * static_cast<int64_t>(sizeof(int)));
  EXPECT_EQ(run_size(one_block), 4 * static_cast<int64_t>(sizeof(short)));
  for (MPI_Datatype t : {dup_int, contig, vec_dense, one_block}) MPI_Type_free(&t);
}

TEST(RegistryMemo, NotOneRunFromTheStart) {
  MPI_Datatype strided, padded, shifted, shifted_lb, holes, uncommitted;
  MPI_Type_vector(3, 1, 2, MPI_INT, &strided);                    // gaps between blocks
  MPI_Type_create_resized(MPI_INT, 0, 8, &padded);                // extent > size: count 2 has a gap
  const int len = 2;
  const MPI_Aint at = 16;
  MPI_Type_create_hindexed(1, &len, &at, MPI_INT, &shifted);      // data 16 bytes past the buffer
  MPI_Type_create_resized(MPI_INT, -4, 4, &shifted_lb);           // lb != 0
  const int lens[2] = {1, 1};
  const MPI_Aint disps[2] = {0, 8};
  const MPI_Datatype types[2] = {MPI_CHAR, MPI_DOUBLE};
  MPI_Type_create_struct(2, lens, disps, types, &holes);          // a hole inside one element
  for (MPI_Datatype* t : {&strided, &padded, &shifted, &shifted_lb, &holes}) *t = noted(*t);
  MPI_Type_contiguous(2, MPI_INT, &uncommitted);                  // no plan: not one run
  for (MPI_Datatype t : {strided, padded, shifted, shifted_lb, holes, uncommitted})
    EXPECT_LT(run_size(t), 0) << "a type that is not one run of bytes from the buffer's start";
  for (MPI_Datatype t : {strided, padded, shifted, shifted_lb, holes, uncommitted}) MPI_Type_free(&t);
}

// The host test mode (DTMPI_TEST_STAGE_HOST) stages every derived type: with
// derived runs off, only predefined types keep their run size, also for
// types the memo looked up before.
TEST(RegistryMemo, DerivedRunsOff) {
  MPI_Datatype contig;
  MPI_Type_contiguous(3, MPI_INT, &contig);
  contig = noted(contig);
  EXPECT_GE(run_size(contig), 0);
  ty::set_derived_runs_direct(false);
  EXPECT_LT(run_size(contig), 0);
  EXPECT_EQ(run_size(MPI_INT), static_cast<int64_t>(sizeof(int)));
  ty::set_derived_runs_direct(true);
  EXPECT_EQ(run_size(contig), 3 * static_cast<int64_t>(sizeof(int)));
  MPI_Type_free(&contig);
}

}  // namespace
