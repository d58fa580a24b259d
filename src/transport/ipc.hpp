// CUDA IPC between the processes of a node: exporting a region of this
// process's device memory, and mapping a region another process exported
// (cached). The header is CUDA-free; without CUDA nothing is exported or
// mapped (transport/ipc_nocuda.cpp). Ready signals over the same mechanism:
// transport/ipc_signal.hpp.
#pragma once
#include <cstdint>

#include "base/result.hpp"

namespace dtmpi::transport {

// A region of one process's device allocation that a process on the same
// node can map: the allocation's handle, its buffer id (unique per
// allocation for the life of the exporting process: the importer's cache key)
// and where the region starts in it.
struct IpcRegion {
  unsigned char handle[64] = {};
  uint64_t buffer_id = 0;
  int64_t offset = 0;
};
// Exports the allocation holding device pointer `p` (cached per allocation;
// `pooled`: p is a pooled buffer, which lives until ipc_close_all, so the
// cache is consulted by address before asking the driver).
Result<IpcRegion> ipc_export(const void* p, bool pooled = false);
// Maps `r` exported by process `peer` into `device` and returns the region's
// address there. Mappings are cached per (peer, allocation) and the least
// recently used are closed beyond a bound. `local`: the region is this
// process's own (a message to itself: CUDA cannot open its own handles), so
// its address is looked up among what this process exported.
Result<const void*> ipc_open(int peer, const IpcRegion& r, int device, bool local = false);
// Closes every mapping and forgets every export (at MPI_Finalize).
void ipc_close_all();

}  // namespace dtmpi::transport
