// Batched sends (DTMPI_BATCH_PACKS): the packs of the device-method sends an
// application posts before it waits, queued as one batch with one write of
// their ready values (transport/ipc_signal.hpp). The header is CUDA-free;
// without CUDA nothing is batched (transport/ipc_nocuda.cpp).
#pragma once
#include <cstdint>

#include "base/result.hpp"
#include "runtime/markers.hpp"
#include "runtime/pointer_kind.hpp"
#include "transport/ipc_signal.hpp"
#include "type/registry.hpp"

namespace dtmpi::transport {

// The pack of `count` elements of `user` (GPU ui.device) into device memory
// `dst`, followed by the write of the reserved ready value `ready`
// (ipc_signal_reserve), is not queued now but added to the device's open
// batch; flush_packs queues the batch: one kernel launch for up to 32 packs
// (pack::pack_pieces_device) and one counter write for all their values. The
// returned marker reads as not done until then. Flushed by every
// MPI_Wait*/MPI_Test* (ledger::progress), before anything waits for or
// commits on the transfer stream (runtime::wait_stream, ipc_signal_commit,
// runtime::wait_marker and release_marker of a pending marker: the runtime's
// held work, runtime/streams.hpp), at MPI_Finalize, and, whatever the
// application does next (it may block in a call dtmpi does not see while a
// peer waits for these bytes), by a helper thread at most kBatchDelayUs after
// the batch was opened -- the thread makes CUDA calls only. Values must be
// reserved and batched by one thread (may_announce_early excludes
// MPI_THREAD_MULTIPLE). kErrUnsupported: nothing batched, pack now.
inline constexpr int kBatchDelayUs = 200;
Result<runtime::GpuMarker> pack_later(const type::PlanPtr& plan, int64_t count, const void* user,
                                      const runtime::PointerInfo& ui, void* dst, const IpcSignal& ready);
// Queues the open batch of `device` (-1: of every device).
Status flush_packs(int device = -1);

}  // namespace dtmpi::transport
