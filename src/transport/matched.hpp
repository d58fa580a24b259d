// A message a matched probe (MPI_Mprobe, MPI_Improbe) handed to the
// application, kept in the request ledger under its MPI_Message handle until
// the matched receive. Either the system MPI still holds the message (`taken`
// null: the receive lands it as usual), or dtmpi took it (a multi-message
// descriptor, or a message an earlier MPI_Probe stashed) and the handle is a
// stand-in: a real matched message of dtmpi's own (zero bytes to itself on a
// private communicator), whose send completes once it is received.
#pragma once
#include <mpi.h>

#include <memory>

#include "transport/stash.hpp"

namespace dtmpi::transport {

struct MatchedMessage {
  MPI_Comm comm = MPI_COMM_NULL;                 // errors of the matched receive go to its handler
  std::unique_ptr<Stashed> taken;                // dtmpi holds the message
  MPI_Request stand_in_send = MPI_REQUEST_NULL;  // completes once the stand-in is received (MPICH)
};

}  // namespace dtmpi::transport
