// Counters of what dtmpi did. Each thread bumps its own copy with plain
// (non-RMW) relaxed atomic stores, so counting costs no locked instruction on
// the hot path; totals sum every thread's copy.
#pragma once
#include <cstdint>
#include <string>

namespace dtmpi::runtime {

enum class Counter : int {
  kPacks,           // MPI_Pack served by dtmpi
  kUnpacks,         // MPI_Unpack served by dtmpi
  kGpuPacks,        // MPI_Pack/MPI_Unpack with a GPU buffer served by dtmpi ...
  kGpuPacksQueued,  // ... of those, returned once queued (DTMPI_PACK_ASYNC)
  kForwarded,       // pack/unpack calls passed through
  kStagedSends,     // point-to-point sends staged through host buffers
  kStagedRecvs,     // point-to-point receives staged through host buffers
  kMultiSends,      // multi-message sends (pipelined, IPC, rendezvous)
  kInPlaceSends,    // of those, read by the receiver where they lie (inside blocking collectives)
  kChunkedSends,    // of those, packed in chunks the receiver reads one by one (DTMPI_IPC_CHUNK_MIN)
  kBatchedPacks,    // device-method sends whose packs were queued as a batch (DTMPI_BATCH_PACKS) ...
  kBatchLaunches,   // ... by this many kernel launches
  kMultiRecvs,      // receives that met a multi-message descriptor
  kIpcReads,        // receives unpacked straight from a peer GPU over CUDA IPC
  kDeviceSends,     // GPU buffers handed packed to a CUDA-aware system MPI
  kPersistentStarts,  // MPI_Start of persistent requests dtmpi serves
  kStagedCollectives,  // collectives whose buffers dtmpi staged
  kP2pCollectives,     // of those, exchanged point to point through dtmpi ...
  kSelfPieces,         // ... pieces a rank sent to itself, moved without a message
  kStagingAcquired,    // staging buffers lent (acquire_staging) ...
  kStagingReleased,    // ... and returned: the difference at exit shows a leak
  kPackedBytes,
  kRmaWindows,         // windows dtmpi serves (src/rma) ...
  kRmaOps,             // ... one-sided operations issued on them ...
  kRmaDirect,          // ... of those, moved directly into or out of a mapped peer window (CUDA IPC) ...
  kRmaLayoutKernels,   // ... (of those, by one kernel from a non-contiguous layout to another) ...
  kRmaApplied,         // ... and applied at this rank as their target
  kTunedCollectives,   // collectives run by dtmpi's own algorithms (src/coll)
  kCount
};

void count(Counter c, uint64_t n = 1);
uint64_t total(Counter c);
std::string format_stats();

}  // namespace dtmpi::runtime
