// The MPI_Wait* / MPI_Test* family, MPI_Request_free and
// MPI_Request_get_status. Requests are the system MPI's own (generalized
// requests for transfers dtmpi completes itself); when none carries dtmpi work
// and no transfer is in flight every call is a pass-through.
// Otherwise dtmpi's work for the handles is taken out of its table before the
// call (runtime::ClaimedOps: a handle the call completes may be reused by
// another thread at once), the handles are remembered before the call (MPI sets completed ones
// to MPI_REQUEST_NULL), statuses are captured even when the application
// ignores them (a staged receive needs its byte count) and given back as the
// system MPI's call left them (runtime/status.hpp), and each completed
// tracked request is finished (unpacked, staging returned) before the call returns.
// An active dtmpi persistent request stands in the array for its operation's
// request during the call (transport/persistent.hpp).
#include <vector>

#include "base/trace.hpp"
#include "interpose/boundary.hpp"
#include "interpose/entries.hpp"
#include "interpose/export.hpp"
#include "transport/persistent.hpp"
#include "base/system_mpi.hpp"
#include "transport/ledger.hpp"
#include "runtime/status.hpp"
#include "transport/engine.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::Status;
using dtmpi::interpose::completion_result;

namespace {

namespace ledger = dtmpi::transport::ledger;

// Anything for dtmpi to do (the ledger's one counter): tracked requests,
// active persistent requests, transfers in flight, generalized requests of
// dtmpi's whose errors need restoring, stashed messages.
inline bool idle() { return ledger::idle(); }
inline void progress_all() { ledger::progress(); }

// The system MPI's code of the call (its own errors it has reported), and
// the error of dtmpi's own work for the requests it completed folded in
// (`done`: the first error stays, as MPI returns the first of several).
Status called(int rc) { return DTMPI_MPI_FORWARD(rc); }
void fold(Status done, Status& s) { s = dtmpi::first_error(std::move(s), std::move(done)); }

// Finishes the claimed ops of slots 0..n) of a Waitall/Testall that completed
// them all (statuses[i] for slot i).
void finish_slots(ledger::ClaimedOps& claimed, int n, MPI_Status* statuses, Status& s) {
  if (!claimed.empty()) fold(claimed.finish_first(n, statuses), s);
}

// While transfers are in flight a blocking wait must not sleep inside the
// system MPI: it becomes a loop of the interposed test, which runs progress.
// `test(flag)` returns the test's Status and sets flag when the wait is over.
template <class Test>
Status wait_by_testing(Test test) {
  for (;;) {
    int flag = 0;
    Status s = test(flag);
    if (flag || !s) return s;
  }
}

// Before MPI_Waitall while transfers are in flight: dtmpi's progress runs
// until every request is complete (MPI_Request_get_status leaves them in
// place), then the system MPI's own MPI_Waitall returns at once and writes
// the statuses its way (MPICH's writes MPI_ERROR, its MPI_Testall does not).
void progress_until_complete(const MPI_Request* reqs, int n) {
  for (int i = 0; i < n && tp::busy();) {
    int flag = 0;
    if (reqs[i] == MPI_REQUEST_NULL ||
        !DTMPI_MPI_PROBE(REAL(MPI_Request_get_status)(reqs[i], &flag, MPI_STATUS_IGNORE)) || flag) {
      ++i;  // complete (or failed: the system MPI's wait reports it)
      continue;
    }
    progress_all();
  }
}

// dtmpi's operations behind generalized requests that the system MPI's call
// completed in error report their own error (MPI_ERR_TRUNCATE...): MPICH
// reports any failed generalized request as MPI_ERR_OTHER. `orig[k]` was
// completed with status k; `single`: the call returns that error itself --
// where it returns an error at all (Open MPI's MPI_Request_get_status
// returns success for a failed request).
void restore_errors(const MPI_Request* orig, int n, rt::CallStatuses& st, Status& s, bool single) {
  if (!tp::any_completed_errors()) return;
  for (int k = 0; k < n; ++k) {
    Status failed = tp::completed_error(orig[k]);
    if (failed) continue;
    st.set_error(static_cast<size_t>(k), failed.error().code);
    if (single && !s) s = std::move(failed);
  }
}

void copy_out(const rt::CallStatuses& st, MPI_Status* out, int n) {
  if (out == MPI_STATUSES_IGNORE) return;
  for (int i = 0; i < n; ++i) st.copy_out(static_cast<size_t>(i), &out[i]);
}

// Runs `call` with active dtmpi persistent handles in reqs[0..n) swapped for
// their operations' requests.
template <class Call>
Status with_operations(MPI_Request* reqs, int n, Call call) {
  if (!tp::persistent::any_active()) return call();
  tp::persistent::HandleSwap swap(reqs, n);
  return call();
}

Status wait(MPI_Request* request, MPI_Status* status);
Status test(MPI_Request* request, int* flag, MPI_Status* status);

Status wait(MPI_Request* request, MPI_Status* status) {
  if (idle()) return called(REAL(MPI_Wait)(request, status));
  if (tp::busy()) return wait_by_testing([&](int& flag) { return test(request, &flag, status); });
  progress_all();
  const MPI_Request orig = *request;
  ledger::ClaimedOps claimed(request, 1);
  rt::CallStatuses st(status, 1);
  tp::begin_completions();
  const int rc = REAL(MPI_Wait)(request, st.data());
  st.settle(rc, true);
  Status s = called(rc);
  restore_errors(&orig, 1, st, s, true);
  if (!claimed.empty()) fold(claimed.finish(0, &st[0]), s);
  st.copy_out(0, status);
  return s;
}

Status test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (idle()) return called(REAL(MPI_Test)(request, flag, status));
  progress_all();
  const MPI_Request orig = *request;
  ledger::ClaimedOps claimed(request, 1);
  rt::CallStatuses st(status, 1);
  tp::begin_completions();
  const int rc = REAL(MPI_Test)(request, flag, st.data());
  st.settle(rc, true);
  Status s = called(rc);
  if (*flag) restore_errors(&orig, 1, st, s, true);
  if (*flag && !claimed.empty()) fold(claimed.finish(0, &st[0]), s);
  st.copy_out(0, status);
  return s;
}

Status waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (idle()) return called(REAL(MPI_Waitall)(count, requests, statuses));
  DTMPI_TRACE("MPI_Waitall: entry");
  progress_until_complete(requests, count);
  progress_all();
  std::vector<MPI_Request> orig(requests, requests + count);
  ledger::ClaimedOps claimed(requests, count);
  rt::CallStatuses st(statuses, count);
  tp::begin_completions();
  const int rc = REAL(MPI_Waitall)(count, requests, st.data());
  st.settle(rc, false);
  Status s = called(rc);
  restore_errors(orig.data(), count, st, s, false);
  finish_slots(claimed, count, st.data(), s);
  DTMPI_TRACE("MPI_Waitall: done");
  copy_out(st, statuses, count);
  return s;
}

Status testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (idle()) return called(REAL(MPI_Testall)(count, requests, flag, statuses));
  progress_all();
  std::vector<MPI_Request> orig(requests, requests + count);
  ledger::ClaimedOps claimed(requests, count);
  rt::CallStatuses st(statuses, count);
  tp::begin_completions();
  const int rc = REAL(MPI_Testall)(count, requests, flag, st.data());
  st.settle(rc, false);
  Status s = called(rc);
  if (*flag) restore_errors(orig.data(), count, st, s, false);
  if (*flag) finish_slots(claimed, count, st.data(), s);
  copy_out(st, statuses, count);
  return s;
}

Status testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status);

Status waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (idle()) return called(REAL(MPI_Waitany)(count, requests, index, status));
  if (tp::busy()) return wait_by_testing([&](int& flag) { return testany(count, requests, index, &flag, status); });
  progress_all();
  std::vector<MPI_Request> orig(requests, requests + count);
  ledger::ClaimedOps claimed(requests, count);
  rt::CallStatuses st(status, 1);
  tp::begin_completions();
  const int rc = REAL(MPI_Waitany)(count, requests, index, st.data());
  st.settle(rc, true);
  Status s = called(rc);
  if (*index != MPI_UNDEFINED) restore_errors(&orig[static_cast<size_t>(*index)], 1, st, s, true);
  if (*index != MPI_UNDEFINED && !claimed.empty()) fold(claimed.finish(*index, &st[0]), s);
  st.copy_out(0, status);
  return s;
}

Status testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (idle()) return called(REAL(MPI_Testany)(count, requests, index, flag, status));
  progress_all();
  std::vector<MPI_Request> orig(requests, requests + count);
  ledger::ClaimedOps claimed(requests, count);
  rt::CallStatuses st(status, 1);
  tp::begin_completions();
  const int rc = REAL(MPI_Testany)(count, requests, index, flag, st.data());
  st.settle(rc, true);
  Status s = called(rc);
  if (*flag && *index != MPI_UNDEFINED) {
    restore_errors(&orig[static_cast<size_t>(*index)], 1, st, s, true);
    if (!claimed.empty()) fold(claimed.finish(*index, &st[0]), s);
  }
  st.copy_out(0, status);
  return s;
}

using SomeFn = int (*)(int, MPI_Request[], int*, int[], MPI_Status[]);

Status some(SomeFn fn, int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  progress_all();
  std::vector<MPI_Request> orig(requests, requests + incount);
  ledger::ClaimedOps claimed(requests, incount);
  rt::CallStatuses st(statuses, incount);
  tp::begin_completions();
  const int rc = fn(incount, requests, outcount, indices, st.data());
  st.settle(rc, false);
  Status s = called(rc);
  if (*outcount != MPI_UNDEFINED && *outcount > 0 && (!claimed.empty() || tp::any_completed_errors())) {
    std::vector<MPI_Request> done(static_cast<size_t>(*outcount));
    for (int k = 0; k < *outcount; ++k) done[static_cast<size_t>(k)] = orig[static_cast<size_t>(indices[k])];
    restore_errors(done.data(), *outcount, st, s, false);
    if (!claimed.empty()) fold(claimed.finish_all(indices, st.data(), *outcount), s);
  }
  if (*outcount != MPI_UNDEFINED) copy_out(st, statuses, *outcount);
  return s;
}
Status waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (idle()) return called(REAL(MPI_Waitsome)(incount, requests, outcount, indices, statuses));
  if (tp::busy())
    return wait_by_testing([&](int& flag) {
      Status s = some(REAL(MPI_Testsome), incount, requests, outcount, indices, statuses);
      flag = *outcount != 0;
      return s;
    });
  return some(REAL(MPI_Waitsome), incount, requests, outcount, indices, statuses);
}

Status testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (idle()) return called(REAL(MPI_Testsome)(incount, requests, outcount, indices, statuses));
  return some(REAL(MPI_Testsome), incount, requests, outcount, indices, statuses);
}

}  // namespace

namespace dtmpi::interpose {
Status wait(MPI_Request* request, MPI_Status* status) { return ::wait(request, status); }
Status waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return ::waitall(count, requests, statuses);
}
}  // namespace dtmpi::interpose

DTMPI_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return completion_result(with_operations(request, 1, [&] { return wait(request, status); }));
}
DTMPI_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return completion_result(with_operations(request, 1, [&] { return test(request, flag, status); }));
}
DTMPI_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return completion_result(with_operations(requests, count, [&] { return waitall(count, requests, statuses); }));
}
DTMPI_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return completion_result(with_operations(requests, count, [&] { return testall(count, requests, flag, statuses); }));
}
DTMPI_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  return completion_result(with_operations(requests, count, [&] { return waitany(count, requests, index, status); }));
}
DTMPI_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  return completion_result(
      with_operations(requests, count, [&] { return testany(count, requests, index, flag, status); }));
}
DTMPI_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                              MPI_Status statuses[]) {
  return completion_result(
      with_operations(requests, incount, [&] { return waitsome(incount, requests, outcount, indices, statuses); }));
}
DTMPI_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                              MPI_Status statuses[]) {
  return completion_result(
      with_operations(requests, incount, [&] { return testsome(incount, requests, outcount, indices, statuses); }));
}

DTMPI_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (Status s = dtmpi::ok_status(); tp::persistent::free_handle(request, s)) return completion_result(s);
  if (request && ledger::detach(*request)) {
    *request = MPI_REQUEST_NULL;  // dtmpi keeps the real request and finishes it later
    return MPI_SUCCESS;
  }
  return REAL(MPI_Request_free)(request);
}

DTMPI_EXPORT int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  // an active dtmpi persistent request: the status of its operation
  tp::persistent::active_operation(request, request);
  if (idle()) return REAL(MPI_Request_get_status)(request, flag, status);
  progress_all();
  rt::CallStatuses st(status, 1);
  tp::begin_completions();
  const int rc = REAL(MPI_Request_get_status)(request, flag, st.data());
  st.settle(rc, true);
  Status s = called(rc);
  if (*flag) restore_errors(&request, 1, st, s, true);
  // complete: finish now so the data is in place when the application looks;
  // the later MPI_Wait/MPI_Test then finds nothing left to do
  if (*flag && ledger::any_tracked()) fold(ledger::finish_tracked(request, &st[0]), s);
  st.copy_out(0, status);
  return completion_result(s);
}
