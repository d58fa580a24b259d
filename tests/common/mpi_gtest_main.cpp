// GoogleTest main for tests that run under mpiexec: every rank runs every
// test; rank 0 prints the usual report, other ranks print only their failures;
// the exit code is non-zero if any rank failed. Where dtmpi is in the process
// (linked or preloaded), a rank also fails if, after MPI_Finalize, a staging
// buffer dtmpi lent was never returned: every test is a leak check too.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/mpi_init.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

// null unless dtmpi is in the process
extern "C" const char* dtmpi_stats(void) __attribute__((weak));

namespace {
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};
// The staging buffers dtmpi lent and did not get back (0 without dtmpi).
long long staging_outstanding() {
  if (!dtmpi_stats) return 0;
  const char* s = dtmpi_stats();
  const char* lent = s ? std::strstr(s, "staging buffers lent ") : nullptr;
  const char* back = lent ? std::strstr(lent, ", returned ") : nullptr;
  if (!back) return 0;
  return std::atoll(lent + std::strlen("staging buffers lent ")) - std::atoll(back + std::strlen(", returned "));
}

}  // namespace

int main(int argc, char** argv) {
  dtmpi::testing::init_mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (const long long left = staging_outstanding(); left != 0) {
    std::fprintf(stderr, "[rank %d] %lld staging buffers lent by dtmpi were never returned\n", rank, left);
    return 1;
  }
  return any;
}
