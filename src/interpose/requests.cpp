// The MPI_Wait* / MPI_Test* family, MPI_Request_free and
// MPI_Request_get_status. Requests are the system MPI's own (generalized
// requests for transfers dtmpi completes itself); when none carries dtmpi work
// and no transfer is in flight every call is a pass-through.
// Otherwise dtmpi's work for the handles is taken out of its table before the
// call (runtime::ClaimedOps: a completed handle may be reused by another thread
// at once), statuses are captured even when the application
// ignores them (a staged receive needs its byte count), and each completed
// tracked request is finished (unpacked, staging returned) before the call returns.
// An active dtmpi persistent request stands in the array for its operation's
// request during the call (interpose/persistent.hpp).
#include <vector>

#include "base/trace.hpp"
#include "interpose/export.hpp"
#include "interpose/persistent.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/requests.hpp"
#include "transport/engine.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;

namespace {

// Anything for dtmpi to do: tracked requests, or transfers in flight.
inline bool idle() { return !rt::any_tracked() && !tp::busy(); }

void progress_all() {
  tp::poll();
  rt::progress();
}

// Statuses for `n` requests, MPI_ERROR preset so that calls which succeed as a
// whole (and leave MPI_ERROR alone) read as successes.
std::vector<MPI_Status> fresh_statuses(int n) {
  std::vector<MPI_Status> st(static_cast<size_t>(n > 0 ? n : 1));
  for (auto& s : st) s.MPI_ERROR = MPI_SUCCESS;
  return st;
}

// Folds an error of dtmpi's own work (`frc`) into the call's code.
void fold(int frc, int& rc) {
  if (frc != MPI_SUCCESS && rc == MPI_SUCCESS) rc = frc;
}

// Finishes the claimed ops of slots 0..n) of a Waitall/Testall that completed
// them all (statuses[i] for slot i).
void finish_slots(rt::ClaimedOps& claimed, int n, MPI_Status* statuses, int& rc) {
  if (claimed.empty()) return;
  std::vector<int> slots(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = i;
  fold(claimed.finish_all(slots.data(), statuses, n), rc);
}

// While transfers are in flight a blocking wait must not sleep inside the
// system MPI: it becomes a loop of the interposed test, which runs progress.
// `test(flag)` returns an MPI code and sets flag when the wait is over.
template <class Test>
int wait_by_testing(Test test) {
  for (;;) {
    int flag = 0;
    const int rc = test(flag);
    if (flag || rc != MPI_SUCCESS) return rc;
  }
}

void copy_out(const std::vector<MPI_Status>& st, MPI_Status* out, int n) {
  if (out == MPI_STATUSES_IGNORE) return;
  for (int i = 0; i < n; ++i) out[i] = st[static_cast<size_t>(i)];
}

// Runs `call` with active dtmpi persistent handles in reqs[0..n) swapped for
// their operations' requests.
template <class Call>
int with_operations(MPI_Request* reqs, int n, Call call) {
  if (!dtmpi::interpose::persistent::any_active()) return call();
  dtmpi::interpose::persistent::HandleSwap swap(reqs, n);
  return call();
}

int wait(MPI_Request* request, MPI_Status* status) {
  if (idle()) return REAL(MPI_Wait)(request, status);
  if (tp::busy()) return wait_by_testing([&](int& flag) { return MPI_Test(request, &flag, status); });
  rt::progress();
  rt::ClaimedOps claimed(request, 1);
  auto st = fresh_statuses(1);
  int rc = REAL(MPI_Wait)(request, st.data());
  st[0].MPI_ERROR = rc;
  if (!claimed.empty()) fold(claimed.finish(0, st.data()), rc);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  return rc;
}

int test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (idle()) return REAL(MPI_Test)(request, flag, status);
  progress_all();
  rt::ClaimedOps claimed(request, 1);
  auto st = fresh_statuses(1);
  int rc = REAL(MPI_Test)(request, flag, st.data());
  st[0].MPI_ERROR = rc;
  if (*flag && !claimed.empty()) fold(claimed.finish(0, st.data()), rc);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  return rc;
}

int waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (idle()) return REAL(MPI_Waitall)(count, requests, statuses);
  DTMPI_TRACE("MPI_Waitall: entry");
  if (tp::busy()) {
    const int rc = wait_by_testing([&](int& flag) { return MPI_Testall(count, requests, &flag, statuses); });
    DTMPI_TRACE("MPI_Waitall: done");
    return rc;
  }
  rt::progress();
  rt::ClaimedOps claimed(requests, count);
  auto st = fresh_statuses(count);
  int rc = REAL(MPI_Waitall)(count, requests, st.data());
  finish_slots(claimed, count, st.data(), rc);
  copy_out(st, statuses, count);
  return rc;
}

int testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (idle()) return REAL(MPI_Testall)(count, requests, flag, statuses);
  progress_all();
  rt::ClaimedOps claimed(requests, count);
  auto st = fresh_statuses(count);
  int rc = REAL(MPI_Testall)(count, requests, flag, st.data());
  if (*flag) finish_slots(claimed, count, st.data(), rc);
  copy_out(st, statuses, count);
  return rc;
}

int waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (idle()) return REAL(MPI_Waitany)(count, requests, index, status);
  if (tp::busy())
    return wait_by_testing([&](int& flag) { return MPI_Testany(count, requests, index, &flag, status); });
  rt::progress();
  rt::ClaimedOps claimed(requests, count);
  auto st = fresh_statuses(1);
  int rc = REAL(MPI_Waitany)(count, requests, index, st.data());
  st[0].MPI_ERROR = rc;
  if (*index != MPI_UNDEFINED && !claimed.empty()) fold(claimed.finish(*index, st.data()), rc);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  return rc;
}

int testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (idle()) return REAL(MPI_Testany)(count, requests, index, flag, status);
  progress_all();
  rt::ClaimedOps claimed(requests, count);
  auto st = fresh_statuses(1);
  int rc = REAL(MPI_Testany)(count, requests, index, flag, st.data());
  st[0].MPI_ERROR = rc;
  if (*flag && *index != MPI_UNDEFINED && !claimed.empty()) fold(claimed.finish(*index, st.data()), rc);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  return rc;
}

using SomeFn = int (*)(int, MPI_Request[], int*, int[], MPI_Status[]);

int some(SomeFn fn, int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  progress_all();
  rt::ClaimedOps claimed(requests, incount);
  auto st = fresh_statuses(incount);
  int rc = fn(incount, requests, outcount, indices, st.data());
  if (*outcount != MPI_UNDEFINED && *outcount > 0 && !claimed.empty())
    fold(claimed.finish_all(indices, st.data(), *outcount), rc);
  if (statuses != MPI_STATUSES_IGNORE && *outcount != MPI_UNDEFINED)
    for (int k = 0; k < *outcount; ++k) statuses[k] = st[static_cast<size_t>(k)];
  return rc;
}
int waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (idle()) return REAL(MPI_Waitsome)(incount, requests, outcount, indices, statuses);
  if (tp::busy())
    return wait_by_testing([&](int& flag) {
      const int rc = some(REAL(MPI_Testsome), incount, requests, outcount, indices, statuses);
      flag = *outcount != 0;
      return rc;
    });
  return some(REAL(MPI_Waitsome), incount, requests, outcount, indices, statuses);
}

int testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (idle()) return REAL(MPI_Testsome)(incount, requests, outcount, indices, statuses);
  return some(REAL(MPI_Testsome), incount, requests, outcount, indices, statuses);
}

}  // namespace

DTMPI_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return with_operations(request, 1, [&] { return wait(request, status); });
}
DTMPI_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return with_operations(request, 1, [&] { return test(request, flag, status); });
}
DTMPI_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return with_operations(requests, count, [&] { return waitall(count, requests, statuses); });
}
DTMPI_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return with_operations(requests, count, [&] { return testall(count, requests, flag, statuses); });
}
DTMPI_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  return with_operations(requests, count, [&] { return waitany(count, requests, index, status); });
}
DTMPI_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  return with_operations(requests, count, [&] { return testany(count, requests, index, flag, status); });
}
DTMPI_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                              MPI_Status statuses[]) {
  return with_operations(requests, incount, [&] { return waitsome(incount, requests, outcount, indices, statuses); });
}
DTMPI_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                              MPI_Status statuses[]) {
  return with_operations(requests, incount, [&] { return testsome(incount, requests, outcount, indices, statuses); });
}

DTMPI_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (int rc; dtmpi::interpose::persistent::free_handle(request, rc)) return rc;
  if (rt::any_tracked() && request && rt::detach(*request)) {
    *request = MPI_REQUEST_NULL;  // dtmpi keeps the real request and finishes it later
    return MPI_SUCCESS;
  }
  return REAL(MPI_Request_free)(request);
}

DTMPI_EXPORT int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (int rc; dtmpi::interpose::persistent::get_status(request, flag, status, rc)) return rc;
  if (idle()) return REAL(MPI_Request_get_status)(request, flag, status);
  progress_all();
  auto st = fresh_statuses(1);
  int rc = REAL(MPI_Request_get_status)(request, flag, st.data());
  st[0].MPI_ERROR = rc;
  // complete: finish now so the data is in place when the application looks;
  // the later MPI_Wait/MPI_Test then finds nothing left to do
  if (*flag && rt::any_tracked()) fold(rt::finish_tracked(request, st.data()), rc);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  return rc;
}
