// Messages MPI_Probe/MPI_Iprobe had to take out of the system MPI. A probe
// must report a multi-message transfer with its real size, but a message of
// exactly kDescriptorBytes can only be told apart from raw bytes by reading
// it: the probe then matches it (MPI_Mprobe), receives it, and keeps it here,
// and the next receive or probe that matches it on that communicator gets it
// from here first. Empty unless a probe met such a message.
#pragma once
#include <mpi.h>

#include <atomic>
#include <optional>
#include <vector>

#include "runtime/status.hpp"
#include "transport/descriptor.hpp"

namespace dtmpi::transport {

struct Stashed {
  MPI_Comm comm = MPI_COMM_NULL;
  int source = 0, tag = 0;
  bool is_descriptor = false;
  Descriptor descriptor;            // is_descriptor
  std::vector<unsigned char> raw;   // otherwise: the message's bytes
  int64_t bytes() const { return is_descriptor ? descriptor.total_bytes : static_cast<int64_t>(raw.size()); }
};

extern std::atomic<int> g_stashed __attribute__((visibility("hidden")));
inline bool stash_any() { return g_stashed.load(std::memory_order_relaxed) != 0; }

// Removes and returns the earliest stashed message a receive of (source, tag)
// on `comm` matches.
std::optional<Stashed> stash_take(MPI_Comm comm, int source, int tag);

// MPI_Iprobe that sees multi-message transfers with their real size. Its
// errors are the system MPI's, already passed to comm's handler (reported).
Status iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status);

// Receives the matched message `msg` (status `st` from its probe) on `comm`
// and tells whether it is a descriptor (only one of kDescriptorBytes may be).
Status read_matched(MPI_Message* msg, MPI_Comm comm, const MPI_Status& st, Stashed& out);
// The status a probe reports for `e` (its real size), over the application's
// `status`; MPI_ERROR written where the system MPI's probe of that kind
// writes it (`call`: runtime/status.hpp).
void status_of(const Stashed& e, MPI_Status* status, runtime::ErrorWrites call);
// The status the system MPI's probe gave (`seen`, seeded from the
// application's) with the real size of `e`.
void probed_status_of(const Stashed& e, const MPI_Status& seen, MPI_Status* status);

}  // namespace dtmpi::transport
