// runtime/buffer_hint.hpp: a table by handle behind a shared lock, consulted
// only while at least one type has the attribute.
#include "runtime/buffer_hint.hpp"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <unordered_map>

#include "base/log.hpp"
#include "runtime/device.hpp"
#include "runtime/system_info.hpp"

namespace dtmpi::runtime {
namespace {

// MPI_Datatype is a pointer in Open MPI and an int in MPICH (a template, so
// that the branch not taken is not compiled).
template <class Handle>
uint64_t key_of(Handle t) {
  if constexpr (std::is_pointer_v<Handle>)
    return reinterpret_cast<uintptr_t>(t);
  else
    return static_cast<uint64_t>(static_cast<uint32_t>(t));
}

struct HintTable {
  std::shared_mutex mu;
  std::unordered_map<uint64_t, PointerInfo> hints;
  std::atomic<size_t> size{0};  // hints.size(), read without the lock
};

HintTable& table() {
  static auto* t = new HintTable;  // never destroyed: types may be freed in static destructors
  return *t;
}

}  // namespace

bool set_buffer_hint(MPI_Datatype type, intptr_t value) {
  PointerInfo info;
  if (value != kBufferHost) {
    if (!gpu_enabled() || value < 0 || value >= query_gpus().count) {
      DTMPI_LOG(kWarn, "dtmpi_buffer_keyval attribute %lld names no usable memory (DTMPI_BUFFER_HOST or a device "
                       "0..n-1 of this process): ignored, buffers of this type are classified",
                static_cast<long long>(value));
      drop_buffer_hint(type);
      return false;
    }
    info.kind = MemKind::kDevice;
    info.device = static_cast<int>(value);
  }
  HintTable& t = table();
  std::unique_lock lock(t.mu);
  t.hints[key_of(type)] = info;
  t.size.store(t.hints.size(), std::memory_order_release);
  return true;
}

void drop_buffer_hint(MPI_Datatype type) {
  HintTable& t = table();
  if (t.size.load(std::memory_order_acquire) == 0) return;
  std::unique_lock lock(t.mu);
  t.hints.erase(key_of(type));
  t.size.store(t.hints.size(), std::memory_order_release);
}

PointerInfo buffer_info(const void* p, MPI_Datatype type) {
  HintTable& t = table();
  if (t.size.load(std::memory_order_relaxed) != 0) {
    std::shared_lock lock(t.mu);
    auto it = t.hints.find(key_of(type));
    if (it != t.hints.end()) return it->second;
  }
  return pointer_info(p);
}

}  // namespace dtmpi::runtime
