// The life cycle of window attributes, keyvals and error handlers on a window
// dtmpi serves, as MPI-3.1 sections 6.7.2-6.7.3 and 8.3.2 say (found by
// MPICH's own test rma/fkeyvalwin: a keyval freed while an attribute used it
// lost its delete callback):
// - set / get / replace (the old value's delete callback runs) / delete;
// - a delete callback's error is MPI_Win_delete_attr's result;
// - MPI_Win_free_keyval while an attribute uses the keyval: MPI_Win_free
//   still calls its delete callback, also after new keyvals were created;
// - MPI_Win_free deletes every attribute (each callback once);
// - an error handler freed (MPI_Errhandler_free) while set on the window is
//   still called;
// - MPI_Win_get_info reports the hints given at creation and by
//   MPI_Win_set_info, and the standard's defaults of the others (MPICH's
//   test rma/win_info found an empty info).
// Also run under the plain system MPI where it can make windows (MPICH):
// the same answers. Two ranks; exits 1 on a mismatch.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Deleted {
  int calls = 0;
  long last_value = 0;
  long last_extra = 0;
};
Deleted g_deleted;
int g_fail_next = 0;

int on_delete(MPI_Win, int, void* value, void* extra) {
  ++g_deleted.calls;
  g_deleted.last_value = *static_cast<long*>(value);
  g_deleted.last_extra = reinterpret_cast<long>(extra);
  if (g_fail_next) {
    g_fail_next = 0;
    return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

int g_handler_calls = 0;
void on_error(MPI_Win*, int*, ...) { ++g_handler_calls; }

int g_failures = 0;
int g_rank = 0;
void expect(bool ok, const char* what) {
  if (!ok) ++g_failures;
  if (g_rank == 0 || !ok) std::printf("rank %d %-60s %s\n", g_rank, what, ok ? "ok" : "WRONG");
}

std::string hint(MPI_Win win, const char* key) {
  MPI_Info info;
  MPI_Win_get_info(win, &info);
  char value[MPI_MAX_INFO_VAL + 1] = {};
  int flag = 0;
  MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
  MPI_Info_free(&info);
  return flag ? value : "(none)";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  std::vector<long> values = {11, 12, 13, 14, 15};
  char buf[64] = {};
  MPI_Win win;
  if (MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win) != MPI_SUCCESS) {
    if (g_rank == 0) std::printf("the MPI cannot create windows here: skipped\n");
    MPI_Finalize();
    return 77;
  }
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  int k1 = MPI_KEYVAL_INVALID, k2 = MPI_KEYVAL_INVALID;
  MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &k1, reinterpret_cast<void*>(101));
  MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &k2, reinterpret_cast<void*>(202));

  MPI_Win_set_attr(win, k1, &values[0]);
  void* got = nullptr;
  int flag = 0;
  MPI_Win_get_attr(win, k1, &got, &flag);
  expect(flag && got == &values[0], "get returns what set stored");
  MPI_Win_set_attr(win, k1, &values[1]);
  expect(g_deleted.calls == 1 && g_deleted.last_value == 11 && g_deleted.last_extra == 101,
         "replacing a value calls the delete callback of the old one");
  g_fail_next = 1;
  const int rc = MPI_Win_delete_attr(win, k1);
  expect(rc != MPI_SUCCESS && g_deleted.calls == 2, "a delete callback's error is MPI_Win_delete_attr's result");
  MPI_Win_get_attr(win, k1, &got, &flag);
  if (flag) MPI_Win_delete_attr(win, k1);  // the standard leaves it to the MPI whether it stays
  g_deleted = Deleted{};

  // freed keyvals, in use
  MPI_Win_set_attr(win, k1, &values[2]);
  MPI_Win_set_attr(win, k2, &values[3]);
  MPI_Win_free_keyval(&k1);
  expect(k1 == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval sets MPI_KEYVAL_INVALID");
  MPI_Win_free_keyval(&k2);
  int later[4];
  for (int& k : later) MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &k, nullptr);

  // an error handler freed while set
  MPI_Errhandler eh;
  MPI_Win_create_errhandler(on_error, &eh);
  MPI_Win_set_errhandler(win, eh);
  MPI_Errhandler_free(&eh);
  MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
  expect(g_handler_calls == 1, "an error handler freed while set is still called");
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

  MPI_Win_free(&win);
  expect(g_deleted.calls == 2, "MPI_Win_free calls the delete callbacks of freed keyvals, once each");
  expect(g_deleted.last_extra == 101 || g_deleted.last_extra == 202, "with their extra state");
  for (int& k : later) MPI_Win_free_keyval(&k);

  // info hints
  MPI_Info in;
  MPI_Info_create(&in);
  MPI_Info_set(in, "no_locks", "true");
  int* base = nullptr;
  MPI_Win_allocate(sizeof(int), sizeof(int), in, MPI_COMM_WORLD, &base, &win);
  MPI_Info_free(&in);
  expect(hint(win, "no_locks") == "true", "MPI_Win_get_info: a hint given at creation");
  expect(hint(win, "accumulate_ordering") == "rar,raw,war,waw", "MPI_Win_get_info: accumulate_ordering's default");
  expect(hint(win, "accumulate_ops") == "same_op_no_op", "MPI_Win_get_info: accumulate_ops's default");
  MPI_Info_create(&in);
  MPI_Info_set(in, "accumulate_ops", "same_op");
  MPI_Win_set_info(win, in);
  MPI_Info_free(&in);
  expect(hint(win, "accumulate_ops") == "same_op", "MPI_Win_get_info: a hint of MPI_Win_set_info");
  MPI_Win_free(&win);

  int all = 0;
  MPI_Allreduce(&g_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s\n", all ? "FAILED" : "ok: all cases");
  MPI_Finalize();
  return all ? 1 : 0;
}
