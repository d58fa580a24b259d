// The ipc unit in a build without CUDA (transport/ipc.hpp, ipc_signal.hpp,
// batched_sends.hpp): nothing is exported, mapped, signalled or batched.
#include "transport/batched_sends.hpp"
#include "transport/ipc.hpp"
#include "transport/ipc_signal.hpp"

namespace dtmpi::transport {

Result<IpcRegion> ipc_export(const void*, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<const void*> ipc_open(int, const IpcRegion&, int, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
void ipc_close_all() {}

Result<IpcSignal> ipc_signal_raise(int) { return Error{kErrUnsupported, "built without CUDA"}; }
Result<IpcSignal> ipc_signal_reserve(int, int) { return Error{kErrUnsupported, "built without CUDA"}; }
Status ipc_signal_commit(const IpcSignal&) { return ok_status(); }
void ipc_signal_release(IpcSignal&) {}
Result<const void*> ipc_signal_word(int, const IpcSignal&, int, bool) { return Error{kErrUnsupported, "built without CUDA"}; }
uint64_t gpu_identity(int) { return 0; }
Status ipc_signal_wait(int, const IpcSignal&, int, bool) { return Error{kErrUnsupported, "built without CUDA"}; }

Result<runtime::GpuMarker> pack_later(const type::PlanPtr&, int64_t, const void*, const runtime::PointerInfo&, void*,
                                      const IpcSignal&) {
  return Error{kErrUnsupported, "built without CUDA"};
}
Status flush_packs(int) { return ok_status(); }

}  // namespace dtmpi::transport
