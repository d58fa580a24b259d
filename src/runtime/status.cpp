#include "runtime/status.hpp"

#include <array>
#include <atomic>
#include <cstring>

#include "base/system_mpi.hpp"
#include "runtime/system_info.hpp"

namespace dtmpi::runtime {

MPI_Status seeded(const MPI_Status* user) {
  MPI_Status st;
  if (user != MPI_STATUS_IGNORE)
    st = *user;
  else
    std::memset(&st, 0, sizeof st);
  st.MPI_ERROR = kErrorUnwritten;
  return st;
}

void give_back(const MPI_Status& st, MPI_Status* user) {
  if (user == MPI_STATUS_IGNORE) return;
  const int keep = user->MPI_ERROR;
  *user = st;
  if (st.MPI_ERROR == kErrorUnwritten) user->MPI_ERROR = keep;
}

CallStatuses::CallStatuses(const MPI_Status* user, int n)
    : st_(static_cast<size_t>(n > 0 ? n : 1)), user_error_(st_.size(), MPI_SUCCESS), written_(st_.size(), 0) {
  for (size_t i = 0; i < st_.size(); ++i) {
    const bool ignored = user == MPI_STATUSES_IGNORE || user == MPI_STATUS_IGNORE || static_cast<int>(i) >= n;
    const MPI_Status* u = ignored ? MPI_STATUS_IGNORE : &user[i];
    st_[i] = seeded(u);
    if (u != MPI_STATUS_IGNORE) user_error_[i] = u->MPI_ERROR;
  }
}

void CallStatuses::settle(int rc, bool single) {
  for (size_t i = 0; i < st_.size(); ++i) {
    written_[i] = st_[i].MPI_ERROR != kErrorUnwritten;
    if (!written_[i]) st_[i].MPI_ERROR = single ? rc : MPI_SUCCESS;
  }
}

void CallStatuses::copy_out(size_t i, MPI_Status* out) const {
  if (out == MPI_STATUS_IGNORE) return;
  *out = st_[i];
  if (!written_[i]) out->MPI_ERROR = user_error_[i];
}

namespace {

// 0 unknown, 1 writes, 2 leaves MPI_ERROR alone.
std::array<std::atomic<int>, static_cast<size_t>(ErrorWrites::kCount)> g_writes{};

}  // namespace

void observe_error_write(ErrorWrites call, const MPI_Status& st) {
  g_writes[static_cast<size_t>(call)].store(st.MPI_ERROR != kErrorUnwritten ? 1 : 2, std::memory_order_relaxed);
}

bool writes_error(ErrorWrites call) {
  auto& w = g_writes[static_cast<size_t>(call)];
  int v = w.load(std::memory_order_relaxed);
  if (v == 0 && (call == ErrorWrites::kSendrecv || call == ErrorWrites::kSendrecvReplace)) {
    MPI_Status st = seeded(MPI_STATUS_IGNORE);
    int dummy = 0;
    if (call == ErrorWrites::kSendrecv)
      REAL(MPI_Sendrecv)(&dummy, 0, MPI_INT, MPI_PROC_NULL, 0, &dummy, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_SELF, &st);
    else
      REAL(MPI_Sendrecv_replace)(&dummy, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_SELF, &st);
    observe_error_write(call, st);
    v = w.load(std::memory_order_relaxed);
  }
  return v == 1;
}

int64_t truncated_count(int64_t message_bytes, int64_t receive_bytes) {
  static const bool whole = mpi_library_version().find("Open MPI") != std::string::npos;
  return whole ? message_bytes : receive_bytes;
}

void set_bytes(MPI_Status* st, int64_t bytes) {
  REAL(MPI_Status_set_elements_x)(st, MPI_BYTE, static_cast<MPI_Count>(bytes));
}

}  // namespace dtmpi::runtime
