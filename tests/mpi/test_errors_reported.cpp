// One boundary for errors (issue 28): an error inside a call dtmpi serves
// reaches the communicator's error handler exactly once, with the class the
// call returns -- whether the system MPI found it in its part of a staged call
// (which already ran the handler) or dtmpi found it itself. Host test mode
// (DTMPI_TEST_STAGE_HOST=1): derived host types take the staged paths GPU
// buffers take.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/mpi_world.hpp"

namespace {

int g_calls = 0;
int g_code = MPI_SUCCESS;

void count_call(MPI_Comm*, int* code, ...) {
  ++g_calls;
  g_code = *code;
}

// Never called: the reductions below fail before any element is reduced.
void no_op(void*, void*, int*, MPI_Datatype*) {}

int class_of(int code) {
  int c = MPI_SUCCESS;
  if (code != MPI_SUCCESS) MPI_Error_class(code, &c);
  return c;
}

// A duplicate of MPI_COMM_WORLD whose error handler counts its calls.
class ErrorsReported : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_create_errhandler(count_call, &handler_);
    MPI_Comm_set_errhandler(comm_, handler_);
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec_);  // derived: staged in the host test mode
    MPI_Type_commit(&vec_);
    g_calls = 0;
    g_code = MPI_SUCCESS;
  }
  void TearDown() override {
    MPI_Type_free(&vec_);
    MPI_Errhandler_free(&handler_);
    MPI_Comm_free(&comm_);
  }
  // The call returned `rc` of `cls` and the handler ran once with it.
  void reported_once(int rc, int cls, const char* what) {
    EXPECT_EQ(class_of(rc), cls) << what;
    EXPECT_EQ(g_calls, 1) << what;
    EXPECT_EQ(class_of(g_code), cls) << what;
    g_calls = 0;
    g_code = MPI_SUCCESS;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Errhandler handler_ = MPI_ERRHANDLER_NULL;
  MPI_Datatype vec_ = MPI_DATATYPE_NULL;
};

}  // namespace

// The system MPI's own check fails after dtmpi staged the buffers (an invalid
// root): its handler call is the only one.
TEST_F(ErrorsReported, SystemMpiErrorInAStagedCollectiveOnce) {
  const int n = dtmpi::testing::world_size();
  std::vector<int> buf(static_cast<size_t>(8 * n), 1), out(static_cast<size_t>(8 * n), 0);
  const uint64_t staged = dtmpi::testing::stat_value("staged collectives ");
  reported_once(MPI_Bcast(buf.data(), 1, vec_, n, comm_), MPI_ERR_ROOT, "MPI_Bcast");
  reported_once(MPI_Gather(buf.data(), 1, vec_, out.data(), 1, vec_, n, comm_), MPI_ERR_ROOT, "MPI_Gather");
  MPI_Op op;  // (a predefined op on a derived type is MPI_ERR_OP in Open MPI)
  MPI_Op_create(no_op, 1, &op);
  reported_once(MPI_Reduce(buf.data(), out.data(), 1, vec_, op, n, comm_), MPI_ERR_ROOT, "MPI_Reduce");
  MPI_Op_free(&op);
  MPI_Request req = MPI_REQUEST_NULL;
  reported_once(MPI_Ibcast(buf.data(), 1, vec_, n, comm_, &req), MPI_ERR_ROOT, "MPI_Ibcast");
  // the staged path was taken (not a pass-through that failed first)
  EXPECT_GE(dtmpi::testing::stat_value("staged collectives ") - staged, 4u);
  MPI_Barrier(comm_);
}

// An error dtmpi finds itself (a packed buffer too small for a type it
// serves): the boundary calls the handler, once.
TEST_F(ErrorsReported, DtmpiErrorOnce) {
  int src[8] = {};
  char out[64];
  int pos = 0;
  reported_once(MPI_Pack(src, 2, vec_, out, 20, &pos, comm_), MPI_ERR_TRUNCATE, "MPI_Pack");
  EXPECT_EQ(pos, 0);
}

// MPI_Sendrecv_replace staged through the transport: a truncated receive
// (the system MPI's, of the packed bytes) is reported once, on the rank that
// receives too little.
TEST_F(ErrorsReported, TruncatedSendrecvReplaceOnce) {
  const int me = dtmpi::testing::world_rank(), n = dtmpi::testing::world_size();
  // rank r sends r+1 elements to r+1 and receives from r-1 into room for r+1:
  // only rank 0, which receives n from rank n-1, receives too much
  std::vector<int> buf(static_cast<size_t>(8 * n), me);
  MPI_Status st;
  const int rc = MPI_Sendrecv_replace(buf.data(), me + 1, vec_, (me + 1) % n, 5, (me + n - 1) % n, 5, comm_, &st);
  if (me == 0) {
    reported_once(rc, MPI_ERR_TRUNCATE, "MPI_Sendrecv_replace");
  } else {
    EXPECT_EQ(rc, MPI_SUCCESS);
    EXPECT_EQ(g_calls, 0);
  }
  MPI_Barrier(comm_);
}
