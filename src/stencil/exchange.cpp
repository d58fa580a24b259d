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

}  // namespace

void DistributedDomain::start_exchange() {
  DomainImpl& d = *impl_;
  if (!d.realized) throw StencilError("dtmpi::stencil: exchange before realize()");
  if (d.in_flight) throw StencilError("dtmpi::stencil: start_exchange() while an exchange is in flight");
  // receives first, so no message waits for its receive to be posted
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    if (p.recv.empty()) continue;  // data flows one way only (a side of radius 0)
    int rc = REAL(MPI_Irecv)(p.recv_host, static_cast<int>(p.recv_bytes), MPI_BYTE, p.rank, kTag, d.comm, &d.requests[i]);
    if (rc != MPI_SUCCESS) fail("MPI_Irecv from rank " + std::to_string(p.rank), rc);
  }
  d.in_flight = true;  // from here, requests are out (the destructor settles them if this throws)
  check(pack_peers(d));
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    if (p.send.empty()) continue;
    int rc = REAL(MPI_Isend)(p.send_host, static_cast<int>(p.send_bytes), MPI_BYTE, p.rank, kTag, d.comm,
                             &d.requests[d.peers.size() + i]);
    if (rc != MPI_SUCCESS) fail("MPI_Isend to rank " + std::to_string(p.rank), rc);
  }
  check(copy_local(d));
}

void DistributedDomain::finish_exchange() {
  DomainImpl& d = *impl_;
  if (!d.realized) throw StencilError("dtmpi::stencil: finish_exchange() before realize()");
  if (!d.in_flight) throw StencilError("dtmpi::stencil: finish_exchange() without start_exchange()");
  d.in_flight = false;
  int rc = REAL(MPI_Waitall)(static_cast<int>(d.requests.size()), d.requests.data(), MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) fail("MPI_Waitall of the halo messages", rc);
  check(unpack_peers(d));
}

bool DistributedDomain::progress() {
  DomainImpl& d = *impl_;
  if (!d.in_flight) throw StencilError("dtmpi::stencil: progress() without start_exchange()");
  int done = 0;
  int rc = REAL(MPI_Testall)(static_cast<int>(d.requests.size()), d.requests.data(), &done, MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) fail("MPI_Testall of the halo messages", rc);
  return done != 0;
}

void DistributedDomain::exchange() {
  start_exchange();
  finish_exchange();
}

}  // namespace dtmpi::stencil
