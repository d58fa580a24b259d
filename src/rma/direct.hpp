// Puts and gets between processes of one node without a message: a window
// over device memory exports its allocation over CUDA IPC when it is created
// (share_regions, one allgather), and an origin on the same node maps it
// (transport/ipc.hpp, cached) and moves the bytes itself -- one copy-engine
// copy when both sides are contiguous, one pack or unpack kernel straight
// into or out of the target's memory when one side is, a pack and an unpack
// through a pooled device buffer otherwise. Synchronous: the bytes are in
// place when the call returns, so the epoch's synchronization needs nothing
// more for them (the target's lock, post and fence protocol still runs:
// rma/sync.hpp). Accumulates always go to the target, which applies them one
// at a time (their atomicity). Falls back to messages where a mapping cannot
// be made (another node, host memory, DTMPI_TEST_REFUSE_IPC).
#pragma once
#include "base/result.hpp"
#include "rma/ops.hpp"
#include "rma/window.hpp"

namespace dtmpi::rma {

// At creation (collective): every rank learns which peers' windows it can map.
Status share_regions(Window& w);
// True when done directly; false: use the message protocol.
Result<bool> direct_put(Window& w, const Side& o, const TargetSide& t, const type::PackPlan& oplan,
                        const type::PackPlan& tplan, int64_t bytes);
Result<bool> direct_get(Window& w, const Side& o, const TargetSide& t, const type::PackPlan& oplan,
                        const type::PackPlan& tplan, int64_t bytes);

// Accumulates (and their fetching forms) by device atomics on the mapped
// target window (rma/atomic.hpp); false where not covered, not mapped, or a
// message accumulate to the target is still queued. `result` null: no fetch.
// `oplan` unused for MPI_NO_OP.
Result<bool> direct_accumulate(Window& w, const Side& o, const Side* result, const TargetSide& t, MPI_Op op,
                               MPI_Datatype element, const type::PackPlan* oplan, const type::PackPlan& tplan,
                               const type::PackPlan* rplan, int64_t bytes);
Result<bool> direct_compare_and_swap(Window& w, const void* origin, const void* compare, void* result,
                                     MPI_Datatype type, const TargetSide& t, const type::PackPlan& plan);

}  // namespace dtmpi::rma
