// The exchange: one receive and one send per peer rank (all its directions
// and quantities in one message), or for a host domain's peers of the node
// one shared-memory buffer each way (transport/node_channels.hpp); the
// same-rank directions copied directly while those messages travel.
#include <string>

#include "base/system_mpi.hpp"
#include "stencil/domain_impl.hpp"
#include "transport/onesided.hpp"

namespace dtmpi::stencil {
namespace {

constexpr int kTag = 0x57e;  // on the domain's own communicator: no other traffic there

[[noreturn]] void fail(const std::string& what, int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  REAL(MPI_Error_string)(rc, text, &len);
  throw StencilError("dtmpi::stencil: " + what + " failed: " + text);
}
void check(const Status& s) {
  if (!s) {
    if (s.error().code > 0) fail(s.error().what, s.error().code);
    throw StencilError(s.error().what);
  }
}

// The MPI calls of the halo messages. Host bytes (host domains, staged
// device domains) go to the system MPI, as all of dtmpi's own traffic does
// (base/system_mpi.hpp). Device buffers go to the plain MPI_* symbols, the
// ones an application's calls resolve to: dtmpi's entry points, which move
// device memory themselves (CUDA IPC within a node) -- device_messages is set
// only where dtmpi is in front (device.cpp), and the requests they return are
// dtmpi's, so they are waited for, tested and cancelled through the same.
int post_recv(const DomainImpl& d, Peer& p, MPI_Request* r) {
  const int n = static_cast<int>(p.recv_bytes);
  if (d.device_messages) return MPI_Irecv(p.recv_device, n, MPI_BYTE, p.rank, kTag, d.comm, r);
  return REAL(MPI_Irecv)(p.recv_host, n, MPI_BYTE, p.rank, kTag, d.comm, r);
}
int post_send(const DomainImpl& d, Peer& p, MPI_Request* r) {
  const int n = static_cast<int>(p.send_bytes);
  if (d.device_messages) return MPI_Isend(p.send_device, n, MPI_BYTE, p.rank, kTag, d.comm, r);
  return REAL(MPI_Isend)(p.send_host, n, MPI_BYTE, p.rank, kTag, d.comm, r);
}
int wait_all(DomainImpl& d) {
  const int n = static_cast<int>(d.requests.size());
  if (d.device_messages) return MPI_Waitall(n, d.requests.data(), MPI_STATUSES_IGNORE);
  return REAL(MPI_Waitall)(n, d.requests.data(), MPI_STATUSES_IGNORE);
}
int test_all(DomainImpl& d, int* done) {
  const int n = static_cast<int>(d.requests.size());
  if (d.device_messages) return MPI_Testall(n, d.requests.data(), done, MPI_STATUSES_IGNORE);
  return REAL(MPI_Testall)(n, d.requests.data(), done, MPI_STATUSES_IGNORE);
}

using transport::NodeChannels;

// One poll of a wait on shared memory: the messages of the same exchange
// move on meanwhile (a peer on another node may need this rank inside MPI),
// then the usual spin-then-yield step.
void poll(DomainImpl& d, int& spins) {
  int done = 0;
  const int rc = test_all(d, &done);
  if (rc != MPI_SUCCESS) fail("MPI_Testall of the halo messages", rc);
  transport::backoff(spins);
}

// start_exchange(): every shared-memory peer's bytes packed straight into
// its buffer of round `seq` and published. A buffer is reused every second
// round: if this rank is two rounds ahead of that peer, it waits here until
// the peer has read it.
void send_shared(DomainImpl& d, uint64_t seq) {
  for (Peer& p : d.peers) {
    if (!p.shared || !p.shm_out.open()) continue;
    for (int spins = 0; !NodeChannels::writable(p.shm_out, seq);) poll(d, spins);
    pack_peer(d, p, NodeChannels::write_buffer(p.shm_out, seq));
    NodeChannels::end_write(p.shm_out, seq);
  }
}

// Unpacks the shared-memory peers whose bytes of round `seq` are there and
// hands their buffers back; true once none is left.
bool receive_shared(DomainImpl& d, uint64_t seq) {
  for (size_t k = 0; k < d.shm_unread.size();) {
    const Peer& p = d.peers[d.shm_unread[k]];
    if (!NodeChannels::readable(p.shm_in, seq)) {
      ++k;
      continue;
    }
    unpack_peer(d, p, NodeChannels::read(p.shm_in, seq));
    NodeChannels::end_read(p.shm_in, seq);
    ++d.received_shm;
    d.shm_unread[k] = d.shm_unread.back();
    d.shm_unread.pop_back();
  }
  return d.shm_unread.empty();
}

// Every MPI peer's send, its bytes packed (in host memory where staged);
// throwing: the first failure raised, else each failure ignored (settling).
void post_sends(DomainImpl& d, bool throwing = true) {
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    if (p.send.empty() || p.shared) continue;
    int rc = post_send(d, p, &d.requests[d.peers.size() + i]);
    if (rc != MPI_SUCCESS && throwing) fail("MPI_Isend to rank " + std::to_string(p.rank), rc);
  }
}

// Deferred sends (domain_impl.hpp): posted once the packs running beside the
// program are done -- at once if `wait`, else only if they already are.
void send_when_packed(DomainImpl& d, bool wait) {
  if (!d.sends_pending) return;
  auto done = device_packs_done(d, wait);
  check(done.ok() ? ok_status() : Status(done.error()));
  if (!done.value()) return;
  d.sends_pending = false;
  post_sends(d);
}

}  // namespace

void settle_requests(DomainImpl& d) noexcept {
  // shared-memory senders waiting for this rank's buffers are let go
  if (d.channels) d.channels->release_senders();
  // deferred sends not posted yet go out as they would have (a peer may be
  // waiting for them in its own finish_exchange()), once their packs are done
  if (d.sends_pending) {
    d.sends_pending = false;
    if (device_packs_done(d, true).ok()) post_sends(d, false);
  }
  for (size_t i = 0; i < d.peers.size(); ++i) {
    if (d.requests[i] == MPI_REQUEST_NULL) continue;
    if (d.device_messages) MPI_Cancel(&d.requests[i]);
    else REAL(MPI_Cancel)(&d.requests[i]);
  }
  wait_all(d);
}

void DistributedDomain::start_exchange() {
  DomainImpl& d = *impl_;
  const bool overlapped = !d.blocking;  // exchange() waits at once: nothing to overlap
  d.blocking = false;
  if (!d.realized) throw StencilError("dtmpi::stencil: exchange before realize()");
  if (d.in_flight) throw StencilError("dtmpi::stencil: start_exchange() while an exchange is in flight");
  d.overlapping = overlapped;
  d.overlapped_exchanges += overlapped ? 1 : 0;
  const uint64_t seq = ++d.exchanges;
  d.shm_unread.clear();
  // receives first, so no message waits for its receive to be posted
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    if (p.shared && p.shm_in.open()) d.shm_unread.push_back(i);
    if (p.recv.empty() || p.shared) continue;  // data flows one way only (a side of radius 0)
    int rc = post_recv(d, p, &d.requests[i]);
    if (rc != MPI_SUCCESS) fail("MPI_Irecv from rank " + std::to_string(p.rank), rc);
  }
  d.in_flight = true;  // from here, requests are out (the destructor settles them if this throws)
  // an overlapped exchange on one GPU, device path: the packs run beside the
  // program's interior kernel, the sends wait for them (progress(),
  // finish_exchange()). Not on the staged path: its messages are host copies
  // by the MPI, which then start only once the GPU has run the packs and
  // their copy to the host -- with ranks sharing a GPU, after the other
  // rank's time slice: measured slower (2 ranks sharing an H200: 35-56% of
  // the exchange hidden deferred, 51-81% not), where the device path went
  // from 61% to 83% (bench/results/stencil-overlap-2xh200-2026-11-28.txt)
  d.sends_pending = overlapped && d.memory == Memory::kDevice && d.device_messages && d.packs_done &&
                    !d.peers.empty();
  d.deferred_sends += d.sends_pending ? 1 : 0;
  if (Status packed = pack_peers(d); !packed) {
    d.sends_pending = false;  // the packs' event was never recorded: nothing to send
    check(packed);
  }
  if (!d.sends_pending) post_sends(d);
  // after the messages, which travel meanwhile (the peers of other nodes,
  // slowest, are issued first as before)
  send_shared(d, seq);
  check(copy_local(d));
}

void DistributedDomain::finish_exchange() {
  DomainImpl& d = *impl_;
  if (!d.realized) throw StencilError("dtmpi::stencil: finish_exchange() before realize()");
  if (!d.in_flight) throw StencilError("dtmpi::stencil: finish_exchange() without start_exchange()");
  // the node's peers first: their bytes are usually there already, and a
  // wait for them moves the messages on (poll)
  for (int spins = 0; !receive_shared(d, d.exchanges);) poll(d, spins);
  send_when_packed(d, true);
  d.in_flight = false;
  int rc = wait_all(d);
  if (rc != MPI_SUCCESS) fail("MPI_Waitall of the halo messages", rc);
  check(unpack_peers(d));
  for (const Peer& p : d.peers) d.received_mpi += !p.shared && !p.recv.empty();
}

bool DistributedDomain::progress() {
  DomainImpl& d = *impl_;
  if (!d.in_flight) throw StencilError("dtmpi::stencil: progress() without start_exchange()");
  send_when_packed(d, false);
  int done = 0;
  int rc = test_all(d, &done);
  if (rc != MPI_SUCCESS) fail("MPI_Testall of the halo messages", rc);
  // only tested: unpacking here would change ghosts of current() that the
  // program may be reading between the halves
  for (size_t i : d.shm_unread) done = done && NodeChannels::readable(d.peers[i].shm_in, d.exchanges);
  return done != 0 && !d.sends_pending;
}

void DistributedDomain::exchange() {
  impl_->blocking = true;  // start_exchange() clears it first thing
  start_exchange();
  finish_exchange();
}

}  // namespace dtmpi::stencil
