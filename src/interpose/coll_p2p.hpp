// The exchange of the all-to-all collectives (v and w forms, neighborhood
// forms) as point-to-point messages through dtmpi, on a private duplicate of
// the communicator: an outgoing side on the GPU is packed with one batched
// launch into one device buffer and its slices travel GPU to GPU where dtmpi
// can (CUDA IPC between ranks of a node: the receiver unpacks each piece with
// its own datatype straight from the sender's slice) -- the system MPI's
// collective would need them staged through host memory. A side in host
// memory is packed (all pieces, one pass) only if dtmpi packs its datatype
// better, else sent with the user's datatypes.
//
// Every rank of a communicator must take the same path: the choice depends
// only on facts all ranks share (a job where some rank uses a GPU, an
// intracommunicator, a blocking call without MPI_IN_PLACE; for the
// neighborhood forms, a private duplicate made when dtmpi saw the topology
// communicator created -- MPI_Dist_graph_create(_adjacent), MPI_Cart_create
// -- because some applications call a neighborhood collective only on ranks
// that have neighbours, a duplicate cannot be made later).
#pragma once
#include <mpi.h>

#include <vector>

#include "interpose/coll_staging.hpp"

namespace dtmpi::interpose {

// Whether blocking all-to-all collectives on `comm` take exchange_p2p
// (the neighbor allgathers too, with the neighborhood rule below).
bool p2p_collectives(MPI_Comm comm);
// At the creation of a topology communicator (collective over it): makes its
// private duplicate if the point-to-point path applies.
void prepare_p2p_collectives(MPI_Comm comm);

// The peers of a blocking call's point-to-point form: piece i of the send
// side goes to dests[i], piece j of the receive side comes from sources[j];
// `cartesian`: repeated neighbours pair as on a Cartesian topology.
struct P2pRoute {
  std::vector<int> sources, dests;
  bool cartesian = false;
};
// Every rank to every rank (Alltoallv/w): blocking, not in place. False: the
// point-to-point form does not apply.
bool p2p_route_everyone(MPI_Comm comm, const void* sendbuf, MPI_Request* req, P2pRoute& route);
// Along the topology's neighbours, in MPI's order (neighborhood forms): blocking,
// on a topology communicator whose private duplicate exists.
bool p2p_route_neighbors(MPI_Comm comm, MPI_Request* req, P2pRoute& route);

// Exchanges the pieces along `route`; returns when all is delivered.
// Repeated neighbours pair as MPI-4.1 sec. 8.6 says (Cartesian: block s lands
// in block s^1; else the k-th message between two ranks in the k-th
// receive). `send_to_all`: `send` is one piece that goes to every destination
// (the neighbor allgathers), packed once.
Status exchange_p2p(const Pieces& send, const Pieces& recv, const P2pRoute& route, MPI_Comm comm,
                    bool send_to_all = false);

}  // namespace dtmpi::interpose
