// Bad one-sided calls on a window dtmpi serves return the error class the
// standard names, through the window's error handler, and never crash or
// hang (issue 21): an operation outside any access epoch, a target rank out
// of range, a displacement past the target's window, an unlock without a
// lock, a user-defined op in an accumulate, MPI_Win_shared_query of a window
// that is not shared memory, an invalid window handle (the system MPI's
// error). A user error handler of the window is called with the class.
// Run with 2 ranks; prints one line per case and exits 1 on a mismatch.
#include <mpi.h>

#include <cstdio>
#include <initializer_list>

namespace {

int g_handler_calls = 0;
int g_handler_class = MPI_SUCCESS;
void on_error(MPI_Win*, int* code, ...) {
  ++g_handler_calls;
  MPI_Error_class(*code, &g_handler_class);
}
void my_op(void*, void*, int*, MPI_Datatype*) {}

int failures = 0;
void expect(int rank, const char* what, int rc, int want) {
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  char name[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(cls, name, &len);
  const bool ok = cls == want;
  if (!ok) ++failures;
  if (rank == 0) std::printf("%-44s %s (class %d)%s\n", what, ok ? "ok" : "WRONG", cls, ok ? "" : name);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int mem[16] = {};
  int buf[4] = {1, 2, 3, 4};
  MPI_Win win;
  MPI_Win_create(mem, sizeof mem, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int peer = (rank + 1) % size;

  expect(rank, "put outside any epoch", MPI_Put(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
  expect(rank, "unlock without a lock", MPI_Win_unlock(peer, win), MPI_ERR_RMA_SYNC);
  MPI_Win_fence(0, win);
  expect(rank, "put to a rank out of range", MPI_Put(buf, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
  expect(rank, "put past the target's window", MPI_Put(buf, 4, MPI_INT, peer, sizeof mem - 8, 4, MPI_INT, win),
         MPI_ERR_RMA_RANGE);
  MPI_Op op;
  MPI_Op_create(my_op, 1, &op);
  expect(rank, "accumulate with a user-defined op", MPI_Accumulate(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, op, win),
         MPI_ERR_OP);
  MPI_Op_free(&op);
  expect(rank, "a good put in the same epoch", MPI_Put(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, win), MPI_SUCCESS);
  // nothing moves: no element types to match (MPICH's rma/badrma)
  expect(rank, "accumulate of 0 ints into 0 doubles", MPI_Accumulate(buf, 0, MPI_INT, peer, 0, 0, MPI_DOUBLE,
                                                                     MPI_SUM, win), MPI_SUCCESS);
  expect(rank, "get_accumulate of 0 ints into 0 doubles",
         MPI_Get_accumulate(buf, 0, MPI_INT, buf, 0, MPI_INT, peer, 0, 0, MPI_DOUBLE, MPI_SUM, win), MPI_SUCCESS);
  MPI_Win_fence(0, win);
  MPI_Aint qsize = 0;
  int qunit = 0;
  void* qbase = nullptr;
  expect(rank, "shared_query of a window not shared", MPI_Win_shared_query(win, 0, &qsize, &qunit, &qbase),
         MPI_ERR_RMA_FLAVOR);
  MPI_Errhandler eh;
  MPI_Win_create_errhandler(on_error, &eh);
  MPI_Win_set_errhandler(win, eh);
  MPI_Win_fence(0, win);
  const int rc = MPI_Put(buf, 1, MPI_INT, size + 3, 0, 1, MPI_INT, win);
  expect(rank, "user handler: put to a rank out of range", rc, MPI_ERR_RANK);
  expect(rank, "user handler called once with the class", g_handler_calls == 1 ? g_handler_class : -1, MPI_ERR_RANK);
  MPI_Win_fence(0, win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh);
  expect(rank, "put on MPI_WIN_NULL (the system MPI's error)",
         MPI_Put(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_WIN_NULL), MPI_ERR_WIN);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  expect(rank, "put after a closing fence", MPI_Put(buf, 1, MPI_INT, peer, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
  MPI_Win_free(&win);

  // a dynamic window: an access across two adjacent attached regions is
  // inside (MPICH's rma/win_dynamic_rma_flush_get), one into a gap is not
  int dyn[32] = {};
  MPI_Aint dyn_at = 0;
  MPI_Get_address(dyn, &dyn_at);
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Win_attach(win, dyn, 8 * sizeof(int));
  MPI_Win_attach(win, dyn + 8, 8 * sizeof(int));
  MPI_Win_attach(win, dyn + 20, 8 * sizeof(int));  // dyn[16..20) is not attached
  MPI_Aint peer_at = 0;
  MPI_Sendrecv(&dyn_at, 1, MPI_AINT, (rank + size - 1) % size, 0, &peer_at, 1, MPI_AINT, peer, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Win_fence(0, win);
  expect(rank, "put across two adjacent attached regions",
         MPI_Put(buf, 4, MPI_INT, peer, peer_at + 6 * static_cast<MPI_Aint>(sizeof(int)), 4, MPI_INT, win),
         MPI_SUCCESS);
  MPI_Win_fence(0, win);
  expect(rank, "the put's bytes arrived", dyn[6] == 1 && dyn[7] == 2 && dyn[8] == 3 && dyn[9] == 4 ? 0 : 1, 0);
  MPI_Win_fence(0, win);
  // the origin cannot know a dynamic window's regions: the target finds the
  // put outside them and reports it at its next synchronization
  expect(rank, "put into memory not attached (origin)",
         MPI_Put(buf, 4, MPI_INT, peer, peer_at + 14 * static_cast<MPI_Aint>(sizeof(int)), 4, MPI_INT, win),
         MPI_SUCCESS);
  expect(rank, "put into memory not attached (target's fence)", MPI_Win_fence(0, win), MPI_ERR_RMA_RANGE);
  expect(rank, "no byte of it written", dyn[14] == 0 && dyn[15] == 0 ? 0 : 1, 0);
  for (int* region : {dyn, dyn + 8, dyn + 20}) MPI_Win_detach(win, region);
  MPI_Win_free(&win);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s\n", all == 0 ? "all as expected" : "MISMATCHES");
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
