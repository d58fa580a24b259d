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

using buffer_hint_detail::key_of;
using buffer_hint_detail::ThreadHints;

namespace {

struct HintTable {
  std::shared_mutex mu;
  std::unordered_map<uint64_t, PointerInfo> hints;
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
  buffer_hint_detail::g_hinted_types.store(t.hints.size(), std::memory_order_release);
  buffer_hint_detail::g_generation.fetch_add(1, std::memory_order_release);
  return true;
}

void drop_buffer_hint(MPI_Datatype type) {
  HintTable& t = table();
  if (buffer_hint_detail::g_hinted_types.load(std::memory_order_acquire) == 0) return;
  std::unique_lock lock(t.mu);
  t.hints.erase(key_of(type));
  buffer_hint_detail::g_hinted_types.store(t.hints.size(), std::memory_order_release);
  buffer_hint_detail::g_generation.fetch_add(1, std::memory_order_release);
}

namespace buffer_hint_detail {
std::atomic<size_t> g_hinted_types{0};
std::atomic<uint64_t> g_generation{1};
__thread ThreadHints t_hints;

PointerInfo buffer_info_hinted(const void* p, MPI_Datatype type) {
  HintTable& t = table();
  {
    const uint64_t key = key_of(type), gen = g_generation.load(std::memory_order_acquire);
    ThreadHints& c = t_hints;
    ThreadHints::Entry* hit = nullptr;
    for (auto& e : c.entries)
      if (e.generation == gen && e.key == key) hit = &e;
    if (!hit) {
      // remembered also where the type has no attribute: then
      // buffer_host_without_call answers for it inline
      hit = &c.entries[c.next];
      c.next = (c.next + 1) % ThreadHints::kWays;
      std::shared_lock lock(t.mu);
      auto it = t.hints.find(key);
      hit->key = key;
      hit->hinted = it != t.hints.end();
      if (hit->hinted) hit->info = it->second;
      // the generation read before the lookup: a change since makes the
      // entry stale at once, never wrong
      hit->generation = gen;
    }
    if (hit->hinted) return hit->info;
  }
  return pointer_info(p);
}
}  // namespace buffer_hint_detail

}  // namespace dtmpi::runtime
