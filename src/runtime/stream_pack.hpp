// Packs and unpacks queued on dtmpi's transfer and receive streams, for the
// multi-message transfers (src/transport): not waited for, a marker
// (runtime/markers.hpp) tells when one is done. The header is CUDA-free.
#pragma once
#include <cstdint>

#include "base/result.hpp"
#include "runtime/buffers.hpp"
#include "runtime/markers.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/plan.hpp"

namespace dtmpi::runtime {

// Queues the pack of `count` elements of `user` (on GPU `ui.device`) into
// device memory `dst` on dtmpi's stream, without waiting for it (`range`: only
// those bytes of the packed stream that starts at `dst`).
Status pack_to_device_async(const type::PackPlan& plan, int64_t count, const void* user, const PointerInfo& ui,
                            void* dst, type::PackedRange range = {});
// Packs `count` elements of `user` (on a GPU) into a new pooled device buffer
// on that GPU and waits for it.
Result<DeviceBuffer> pack_to_device_buffer(const type::PackPlan& plan, int64_t count, const void* user,
                                           const PointerInfo& ui);

// A wait the unpack kernel does itself (pack::Gate): until the word at
// `word` (another GPU's ready counter, mapped here) holds at least `value`.
struct KernelGate {
  const void* word = nullptr;
  uint64_t value = 0;
};
// Queues the unpack of `count` elements from device-accessible `packed` (a
// peer's buffer mapped over CUDA IPC) into GPU memory `user` on dtmpi's
// receive stream of ui.device, and a marker after it. With a gate the unpack is a
// kernel even for contiguous data. `range`: only those bytes of the packed
// stream (`packed` is where the whole stream starts): one chunk of a message.
Result<GpuMarker> unpack_async(const type::PackPlan& plan, int64_t count, const void* packed, void* user,
                               const PointerInfo& ui, KernelGate gate = {}, type::PackedRange range = {});

}  // namespace dtmpi::runtime
