#include "transport/stash.hpp"

#include <deque>
#include <mutex>

#include "base/footprint.hpp"
#include "base/system_mpi.hpp"
#include "transport/ledger.hpp"
#include "transport/peers.hpp"

namespace dtmpi::transport {

std::atomic<int> g_stashed{0};

namespace {

std::mutex g_mu;
std::deque<Stashed> g_entries;  // in the order the probes took them

bool matches(const Stashed& e, MPI_Comm comm, int source, int tag) {
  return e.comm == comm && (source == MPI_ANY_SOURCE || source == e.source) && (tag == MPI_ANY_TAG || tag == e.tag);
}

// Messages probes took before their receive: bounded by what the program probes.
void report_footprint(std::vector<footprint::Part>& out) {
  std::lock_guard lock(g_mu);
  int64_t b = 0;
  for (const auto& e : g_entries) b += static_cast<int64_t>(sizeof(Stashed) + e.raw.capacity());
  out.push_back({"probe stash", "probed messages", b, 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

}  // namespace

void status_of(const Stashed& e, MPI_Status* status, runtime::ErrorWrites call) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = e.source;
  status->MPI_TAG = e.tag;
  if (runtime::writes_error(call)) status->MPI_ERROR = MPI_SUCCESS;
  runtime::set_bytes(status, e.bytes());
  REAL(MPI_Status_set_cancelled)(status, 0);
}

void probed_status_of(const Stashed& e, const MPI_Status& seen, MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  runtime::give_back(seen, status);
  runtime::set_bytes(status, e.bytes());
}

Status read_matched(MPI_Message* msg, MPI_Comm comm, const MPI_Status& st, Stashed& e) {
  e.comm = comm;
  e.source = st.MPI_SOURCE;
  e.tag = st.MPI_TAG;
  int bytes = 0;
  REAL(MPI_Get_count)(&st, MPI_BYTE, &bytes);
  e.raw.resize(static_cast<size_t>(bytes));
  DTMPI_MPI_CHECK(REAL(MPI_Mrecv)(e.raw.data(), bytes, MPI_BYTE, msg, MPI_STATUS_IGNORE));
  if (bytes != kDescriptorBytes) return ok_status();
  if (auto d = decode(e.raw.data(), world_rank_of(comm, e.source), my_world_rank(), e.tag)) {
    e.is_descriptor = true;
    e.descriptor = *d;
    e.raw.clear();
  }
  return ok_status();
}

std::optional<Stashed> stash_take(MPI_Comm comm, int source, int tag) {
  std::lock_guard lock(g_mu);
  for (auto it = g_entries.begin(); it != g_entries.end(); ++it) {
    if (!matches(*it, comm, source, tag)) continue;
    Stashed e = std::move(*it);
    g_entries.erase(it);
    g_stashed.fetch_sub(1, std::memory_order_relaxed);
    ledger::remove_work();
    return e;
  }
  return std::nullopt;
}

Status iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  if (stash_any()) {
    std::lock_guard lock(g_mu);
    for (const auto& e : g_entries) {
      if (!matches(e, comm, source, tag)) continue;
      *flag = 1;
      status_of(e, status, runtime::ErrorWrites::kIprobe);
      return ok_status();
    }
  }
  MPI_Status st = runtime::seeded(status);  // fields the probe leaves alone stay the application's
  Status probed = DTMPI_MPI_STATUS_REPORTED(REAL(MPI_Iprobe)(source, tag, comm, flag, &st));
  if (probed && *flag && st.MPI_SOURCE != MPI_PROC_NULL)
    runtime::observe_error_write(runtime::ErrorWrites::kIprobe, st);
  MPI_Count bytes = 0;
  if (probed && *flag) DTMPI_MPI_WARN(REAL(MPI_Get_elements_x)(&st, MPI_BYTE, &bytes));
  if (!probed || !*flag || bytes != kDescriptorBytes || !descriptors_possible()) {
    runtime::give_back(st, status);
    return probed;
  }
  // Take the probed message (the first from its source with its tag) and
  // look at it. Without blocking: under MPI_THREAD_MULTIPLE another thread may
  // have received it since (then this probe found nothing), or it may now be
  // another message of that envelope (then that one is kept, whatever size).
  MPI_Message msg;
  MPI_Status mst;
  DTMPI_MPI_CHECK_REPORTED(REAL(MPI_Improbe)(st.MPI_SOURCE, st.MPI_TAG, comm, flag, &msg, &mst));
  if (!*flag) return ok_status();
  Stashed e;
  // returned as the system MPI returned it, like the probe's own errors
  if (Status read = read_matched(&msg, comm, mst, e); !read) return Error{read.error().code, "", true};
  probed_status_of(e, st, status);
  std::lock_guard lock(g_mu);
  g_entries.push_back(std::move(e));
  g_stashed.fetch_add(1, std::memory_order_relaxed);
  ledger::add_work();
  return ok_status();
}

}  // namespace dtmpi::transport
