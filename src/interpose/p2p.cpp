// Point-to-point entry points. Host-memory traffic is a pass-through: one
// predictable branch in front of the system MPI (measured by
// `dtmpi-bench latency`). The GPU transfer methods attach here.
#include "interpose/export.hpp"
#include "runtime/real_mpi.hpp"

DTMPI_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm) {
  return REAL(MPI_Send)(buf, count, datatype, dest, tag, comm);
}

DTMPI_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, MPI_Status* status) {
  return REAL(MPI_Recv)(buf, count, datatype, source, tag, comm, status);
}

DTMPI_EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request* request) {
  return REAL(MPI_Isend)(buf, count, datatype, dest, tag, comm, request);
}

DTMPI_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Request* request) {
  return REAL(MPI_Irecv)(buf, count, datatype, source, tag, comm, request);
}

DTMPI_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                              int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                              int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  return REAL(MPI_Sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                            recvtype, source, recvtag, comm, status);
}
