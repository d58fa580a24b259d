// Who the peers are: world ranks behind (communicator, rank), which of them
// share this node and use a GPU, and the private communicator on which the
// messages after a transfer's first one travel (nothing the application posts
// can match them).
#pragma once
#include <mpi.h>

#include <cstdint>

#include "base/result.hpp"

namespace dtmpi::transport {

// Collective over MPI_COMM_WORLD, called from MPI_Init: duplicates the world
// communicator and exchanges (node, GPU) facts.
Status init_peers();
void finalize_peers();
bool peers_ready();

MPI_Comm private_comm();
int my_world_rank();
// World rank of `rank` in `comm` (the remote group of an intercommunicator),
// or -1 when it has none (MPI_PROC_NULL, MPI_ANY_SOURCE, processes from
// MPI_Comm_spawn). Cached on the communicator, dropped when it is freed.
int world_rank_of(MPI_Comm comm, int rank);
bool same_node(int world_rank);
bool peer_uses_gpu(int world_rank);
// Same node, both use GPUs, and no CUDA IPC mapping between us has failed.
bool ipc_possible(int world_rank);
void mark_no_ipc(int world_rank);
// A peer that has read one of this rank's IPC regions (acknowledged a device
// transfer as read) can map them: until then a device-method send completes
// only at the receiver's answer, which may ask this rank for the payload
// (transport/send.cpp). `gated`: its last read was a gated unpack kernel on
// another GPU (Ack::kReadGated).
// `same_gpu`: it is another process on this rank's GPU (Ack::kReadSameGpu).
void mark_ipc_read_by(int world_rank, bool gated, bool same_gpu = false);
bool ipc_read_by(int world_rank);
bool ipc_read_gated_by(int world_rank);
bool shares_gpu_with(int world_rank);
// True when some rank of the job may send a multi-message transfer (one uses
// a GPU, or the host test mode is on, and the system MPI is not CUDA-aware):
// receives must then look for descriptors.
bool descriptors_possible();
// The system MPI takes device pointers (DTMPI_CUDA_AWARE, else
// MPIX_Query_cuda_support): GPU buffers go to it as they are or packed on the GPU.
bool mpi_takes_device_memory();

// Tags on the private communicator. Messages from X to Y with tag
// data_tag(i) carry X's transfer i; ack_tag(i) answers Y's transfer i.
int32_t next_transfer_id();
inline int data_tag(int32_t id) { return 2 * id; }
inline int ack_tag(int32_t id) { return 2 * id + 1; }

}  // namespace dtmpi::transport
