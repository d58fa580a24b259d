// The exchange: one receive and one send per peer rank (all its directions
// and quantities in one message), the same-rank directions copied directly
// while those messages travel.
#include <string>

#include "base/system_mpi.hpp"
#include "stencil/domain_impl.hpp"

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

}  // namespace

void settle_requests(DomainImpl& d) noexcept {
  for (size_t i = 0; i < d.peers.size(); ++i) {
    if (d.requests[i] == MPI_REQUEST_NULL) continue;
    if (d.device_messages) MPI_Cancel(&d.requests[i]);
    else REAL(MPI_Cancel)(&d.requests[i]);
  }
  wait_all(d);
}

void DistributedDomain::start_exchange() {
  DomainImpl& d = *impl_;
  if (!d.realized) throw StencilError("dtmpi::stencil: exchange before realize()");
  if (d.in_flight) throw StencilError("dtmpi::stencil: start_exchange() while an exchange is in flight");
  // receives first, so no message waits for its receive to be posted
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    if (p.recv.empty()) continue;  // data flows one way only (a side of radius 0)
    int rc = post_recv(d, p, &d.requests[i]);
    if (rc != MPI_SUCCESS) fail("MPI_Irecv from rank " + std::to_string(p.rank), rc);
  }
  d.in_flight = true;  // from here, requests are out (the destructor settles them if this throws)
  check(pack_peers(d));
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    if (p.send.empty()) continue;
    int rc = post_send(d, p, &d.requests[d.peers.size() + i]);
    if (rc != MPI_SUCCESS) fail("MPI_Isend to rank " + std::to_string(p.rank), rc);
  }
  check(copy_local(d));
}

void DistributedDomain::finish_exchange() {
  DomainImpl& d = *impl_;
  if (!d.realized) throw StencilError("dtmpi::stencil: finish_exchange() before realize()");
  if (!d.in_flight) throw StencilError("dtmpi::stencil: finish_exchange() without start_exchange()");
  d.in_flight = false;
  int rc = wait_all(d);
  if (rc != MPI_SUCCESS) fail("MPI_Waitall of the halo messages", rc);
  check(unpack_peers(d));
}

bool DistributedDomain::progress() {
  DomainImpl& d = *impl_;
  if (!d.in_flight) throw StencilError("dtmpi::stencil: progress() without start_exchange()");
  int done = 0;
  int rc = test_all(d, &done);
  if (rc != MPI_SUCCESS) fail("MPI_Testall of the halo messages", rc);
  return done != 0;
}

void DistributedDomain::exchange() {
  start_exchange();
  finish_exchange();
}

}  // namespace dtmpi::stencil
