// The reductions dtmpi stages (MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter, MPI_Reduce_local, MPI_Scan, MPI_Exscan) on a strided
// type with user-defined ops, against the system MPI doing the same call
// (DTMPI_TEST_STAGE_HOST=1 stages host buffers of derived types as GPU
// buffers are staged). Part of the test_collectives_more binary.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "mpi/collectives_common.hpp"

using namespace more_collectives;

// Reductions on a strided type (the gaps must keep their bytes), in place,
// every root.
TEST(MoreCollectives, Reductions) {
  const int me = world_rank(), n = world_size();
  Types t;
  MPI_Op user, sum;
  MPI_Op_create(absmax, 1, &user);
  MPI_Op_create(sum2, 1, &sum);
  for (MPI_Op op : {sum, user}) {
    const int c = 6;
    auto sbuf = filled(static_cast<size_t>(c * 3), me, 1);
    std::vector<double> want(static_cast<size_t>(c * 3), -5), got = want;
    ASSERT_EQ(PMPI_Allreduce(sbuf.data(), want.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allreduce(sbuf.data(), got.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want);
    want = sbuf;
    got = sbuf;
    ASSERT_EQ(PMPI_Allreduce(MPI_IN_PLACE, want.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, got.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want);
    for (int root = 0; root < n; ++root) {
      want.assign(want.size(), -5);
      got = want;
      ASSERT_EQ(PMPI_Reduce(sbuf.data(), want.data(), c, t.strided, op, root, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Reduce(sbuf.data(), got.data(), c, t.strided, op, root, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(got, want) << "root " << root;
      want = sbuf;
      got = sbuf;
      const bool r = me == root;
      ASSERT_EQ(PMPI_Reduce(r ? MPI_IN_PLACE : want.data(), r ? want.data() : nullptr, c, t.strided, op, root,
                            MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Reduce(r ? MPI_IN_PLACE : got.data(), r ? got.data() : nullptr, c, t.strided, op, root,
                           MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(got, want) << "in place, root " << root;
    }
    auto big = filled(static_cast<size_t>(n * 2 * 3), me, 2);
    want.assign(6, -5);
    got = want;
    ASSERT_EQ(PMPI_Reduce_scatter_block(big.data(), want.data(), 2, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_scatter_block(big.data(), got.data(), 2, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want);
    want = big;
    got = big;
    ASSERT_EQ(PMPI_Reduce_scatter_block(MPI_IN_PLACE, want.data(), 2, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_scatter_block(MPI_IN_PLACE, got.data(), 2, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(std::vector<double>(got.begin(), got.begin() + 6), std::vector<double>(want.begin(), want.begin() + 6));
    // MPI_Reduce_scatter: rank i gets i % 3 + 1 elements (3 doubles each)
    std::vector<int> counts(static_cast<size_t>(n));
    int total = 0;
    for (int i = 0; i < n; ++i) total += counts[static_cast<size_t>(i)] = i % 3 + 1;
    auto all = filled(static_cast<size_t>(total * 3), me, 3);
    want.assign(static_cast<size_t>(total * 3), -5);
    got = want;
    ASSERT_EQ(PMPI_Reduce_scatter(all.data(), want.data(), counts.data(), t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_scatter(all.data(), got.data(), counts.data(), t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(got, want);
    want = all;
    got = all;
    ASSERT_EQ(PMPI_Reduce_scatter(MPI_IN_PLACE, want.data(), counts.data(), t.strided, op, MPI_COMM_WORLD),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_scatter(MPI_IN_PLACE, got.data(), counts.data(), t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
    const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(me)] * 3);
    EXPECT_EQ(std::vector<double>(got.begin(), got.begin() + static_cast<long>(mine)),
              std::vector<double>(want.begin(), want.begin() + static_cast<long>(mine)));
    // the local reduction
    want = sbuf;
    got = sbuf;
    auto other = filled(static_cast<size_t>(c * 3), me + 1, 4);
    ASSERT_EQ(PMPI_Reduce_local(other.data(), want.data(), c, t.strided, op), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_local(other.data(), got.data(), c, t.strided, op), MPI_SUCCESS);
    EXPECT_EQ(got, want) << "Reduce_local";
    // prefix reductions, out of place and in place; Exscan's result on rank 0 is undefined
    for (bool exclusive : {false, true}) {
      auto fn = exclusive ? PMPI_Exscan : PMPI_Scan;
      auto mpi = exclusive ? MPI_Exscan : MPI_Scan;
      want.assign(static_cast<size_t>(c * 3), -5);
      got = want;
      ASSERT_EQ(fn(sbuf.data(), want.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(mpi(sbuf.data(), got.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
      if (!exclusive || me > 0) {
        EXPECT_EQ(got, want) << (exclusive ? "Exscan" : "Scan");
      }
      want = sbuf;
      got = sbuf;
      ASSERT_EQ(fn(MPI_IN_PLACE, want.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(mpi(MPI_IN_PLACE, got.data(), c, t.strided, op, MPI_COMM_WORLD), MPI_SUCCESS);
      if (!exclusive || me > 0) {
        EXPECT_EQ(got, want) << (exclusive ? "Exscan" : "Scan") << " in place";
      }
    }
  }
  MPI_Op_free(&user);
  MPI_Op_free(&sum);
}
