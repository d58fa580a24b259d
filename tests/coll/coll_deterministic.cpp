// Deterministic reductions (coll/deterministic.hpp; dtmpi_reduction_keyval()
// of include/dtmpi/dtmpi.h): on a communicator with the attribute, Reduce and
// Allreduce (blocking and MPI_I*) give bitwise the left fold in rank order
// ((x_0 op x_1) op x_2) ..., computed here from every rank's input with
// MPI_Reduce_local -- for doubles whose sum depends on the order, a
// pair type (MPI_DOUBLE_INT with MPI_MINLOC), MPI_IN_PLACE, and a
// non-commutative user op on a derived type; MPI_Comm_dup
// keeps the setting, MPI_Comm_delete_attr drops it, other communicators are
// untouched (dtmpi's counter of its own collectives tells who served).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "dtmpi/dtmpi.h"

namespace {

const char* kServed = "dtmpi's collective algorithms ";

// x[k] of rank r: magnitudes from 1e-8 to 1e8, so the sum's rounding depends
// on the order of the additions.
std::vector<double> input(int r, int n) {
  std::mt19937_64 rng(1000 + static_cast<uint64_t>(r));
  std::vector<double> x(static_cast<size_t>(n));
  for (auto& v : x) v = std::ldexp(static_cast<double>(rng() % 1000003) - 500000.0, static_cast<int>(rng() % 54) - 27);
  return x;
}

// The left fold of every rank's `count` elements of `type` (its data at
// `base` laid out as the type says), by MPI_Reduce_local in rank order.
std::vector<double> left_fold(int nranks, int count, MPI_Datatype type, MPI_Op op, int elems) {
  std::vector<double> acc = input(0, elems);
  for (int r = 1; r < nranks; ++r) {
    std::vector<double> x = input(r, elems);
    MPI_Reduce_local(acc.data(), x.data(), count, type, op);  // x = acc op x
    acc.swap(x);
  }
  return acc;
}

// A 2x2 matrix product (row major): not commutative, so the order shows.
void matmul(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<double*>(in);
  auto* b = static_cast<double*>(inout);
  for (int i = 0; i < *len; ++i, a += 4, b += 4) {
    const double c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                         a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, c, sizeof c);
  }
}

class Deterministic : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &me_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    ASSERT_NE(dtmpi_reduction_keyval(), MPI_KEYVAL_INVALID);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_attr(comm_, dtmpi_reduction_keyval(), DTMPI_REDUCTION_DETERMINISTIC);
  }
  void TearDown() override { MPI_Comm_free(&comm_); }
  int me_ = 0, n_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

TEST_F(Deterministic, AllreduceAndReduceAreTheRankOrderFold) {
  const int elems = 1000;
  const std::vector<double> want = left_fold(n_, elems, MPI_DOUBLE, MPI_SUM, elems);
  const uint64_t before = dtmpi::testing::stat_value(kServed);
  std::vector<double> x = input(me_, elems), got(elems, -1);
  MPI_Allreduce(x.data(), got.data(), elems, MPI_DOUBLE, MPI_SUM, comm_);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), elems * sizeof(double))) << "Allreduce";
  got = x;
  MPI_Allreduce(MPI_IN_PLACE, got.data(), elems, MPI_DOUBLE, MPI_SUM, comm_);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), elems * sizeof(double))) << "Allreduce in place";
  for (int root = 0; root < n_; ++root) {
    std::fill(got.begin(), got.end(), -1.0);
    MPI_Reduce(x.data(), got.data(), elems, MPI_DOUBLE, MPI_SUM, root, comm_);
    if (me_ == root) {
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), elems * sizeof(double))) << "root " << root;
    }
  }
  MPI_Request r[2];
  std::vector<double> a(elems, -1), b(elems, -1);
  MPI_Iallreduce(x.data(), a.data(), elems, MPI_DOUBLE, MPI_SUM, comm_, &r[0]);
  MPI_Ireduce(x.data(), b.data(), elems, MPI_DOUBLE, MPI_SUM, n_ - 1, comm_, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  EXPECT_EQ(0, std::memcmp(a.data(), want.data(), elems * sizeof(double))) << "Iallreduce";
  if (me_ == n_ - 1) {
    EXPECT_EQ(0, std::memcmp(b.data(), want.data(), elems * sizeof(double))) << "Ireduce";
  }
  EXPECT_EQ(dtmpi::testing::stat_value(kServed), before + 4 + static_cast<uint64_t>(n_))
      << "not every reduction was served by the deterministic fold";
}

TEST_F(Deterministic, PairTypeAndNonCommutativeOp) {
  // a pair type whose size is not its extent (MPI_DOUBLE_INT), MPI_MINLOC
  struct DI {
    double v;
    int i;
  };
  std::vector<DI> pairs(50), pgot(50), pwant(50);
  for (int r = 0; r < n_; ++r) {
    const std::vector<double> v = input(r, 50);
    for (int k = 0; k < 50; ++k) {
      const DI p{std::floor(v[static_cast<size_t>(k)] / 1e6), r};  // ties: the lower rank wins
      if (r == me_) pairs[static_cast<size_t>(k)] = p;
      if (r == 0 || p.v < pwant[static_cast<size_t>(k)].v) pwant[static_cast<size_t>(k)] = p;
    }
  }
  MPI_Allreduce(pairs.data(), pgot.data(), 50, MPI_DOUBLE_INT, MPI_MINLOC, comm_);
  for (int k = 0; k < 50; ++k) {
    EXPECT_EQ(pgot[static_cast<size_t>(k)].v, pwant[static_cast<size_t>(k)].v) << k;
    EXPECT_EQ(pgot[static_cast<size_t>(k)].i, pwant[static_cast<size_t>(k)].i) << k;
  }
  MPI_Datatype mat;
  MPI_Type_contiguous(4, MPI_DOUBLE, &mat);
  MPI_Type_commit(&mat);
  MPI_Op op;
  MPI_Op_create(matmul, 0, &op);
  const std::vector<double> mwant = left_fold(n_, 25, mat, op, 100);
  std::vector<double> m = input(me_, 100), mgot(100, 0);
  MPI_Allreduce(m.data(), mgot.data(), 25, mat, op, comm_);
  EXPECT_EQ(0, std::memcmp(mgot.data(), mwant.data(), 100 * sizeof(double))) << "matrix products in rank order";
  MPI_Op_free(&op);
  MPI_Type_free(&mat);
}

TEST_F(Deterministic, DupKeepsItDeleteDropsItOthersUntouched) {
  const int elems = 64;
  std::vector<double> x = input(me_, elems), got(elems);
  MPI_Comm dup;
  MPI_Comm_dup(comm_, &dup);
  uint64_t before = dtmpi::testing::stat_value(kServed);
  MPI_Allreduce(x.data(), got.data(), elems, MPI_DOUBLE, MPI_SUM, dup);
  EXPECT_EQ(dtmpi::testing::stat_value(kServed), before + 1) << "a duplicate lost the setting";
  MPI_Comm_free(&dup);
  before = dtmpi::testing::stat_value(kServed);
  MPI_Allreduce(x.data(), got.data(), elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(dtmpi::testing::stat_value(kServed), before) << "a communicator without the attribute was served";
  MPI_Comm_delete_attr(comm_, dtmpi_reduction_keyval());
  MPI_Allreduce(x.data(), got.data(), elems, MPI_DOUBLE, MPI_SUM, comm_);
  EXPECT_EQ(dtmpi::testing::stat_value(kServed), before) << "the setting outlived MPI_Comm_delete_attr";
  // another value than DTMPI_REDUCTION_DETERMINISTIC means nothing
  MPI_Comm_set_attr(comm_, dtmpi_reduction_keyval(), reinterpret_cast<void*>(static_cast<intptr_t>(7)));
  MPI_Allreduce(x.data(), got.data(), elems, MPI_DOUBLE, MPI_SUM, comm_);
  EXPECT_EQ(dtmpi::testing::stat_value(kServed), before);
}

}  // namespace
