// The exported calls that others are made of, as Status-returning functions
// of their own: MPI_Sendrecv(_replace), MPI_Probe, MPI_Mprobe and the
// collectives' point-to-point exchange use these, so that no exported
// function calls another (each ends in the one boundary, interpose/boundary.hpp,
// once). Each does what the exported call of its name does, less the boundary.
#pragma once
#include <mpi.h>

#include <cstdint>

#include "base/result.hpp"
#include "transport/p2p.hpp"

namespace dtmpi::interpose {

// MPI_Isend (interpose/p2p.cpp).
Status isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request);
// MPI_Irecv; receives of `multi_min` bytes and more may meet a descriptor
// (transport::kMultiMin; a collective's piece, whose sender may send it in
// place from transport::kInPlaceMin bytes on: that).
Status irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request,
             int64_t multi_min = transport::kMultiMin);
// MPI_Recv.
Status recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status);
// MPI_Iprobe.
Status iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status);

// MPI_Pack (interpose/pack.cpp).
Status pack(const void* inbuf, int incount, MPI_Datatype type, void* outbuf, int outsize, int* position, MPI_Comm comm);

// MPI_Wait and MPI_Waitall (interpose/requests.cpp) of requests dtmpi posted
// itself (never a persistent handle of the application's).
Status wait(MPI_Request* request, MPI_Status* status);
Status waitall(int count, MPI_Request requests[], MPI_Status statuses[]);

}  // namespace dtmpi::interpose
