// The explicit buffer location (MPI-ACC's datatype attribute, issue 29): an
// application that knows where the buffers of a datatype live says so with
// the attribute dtmpi_buffer_keyval() (include/dtmpi/dtmpi.h), and calls with
// that type skip the classification of their buffer. The attribute's values
// are kept here by datatype handle (set by the interposed MPI_Type_set_attr,
// dropped by the keyval's delete callback: at MPI_Type_delete_attr, when the
// value is replaced and when the type is freed).
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "runtime/pointer_kind.hpp"

namespace dtmpi::runtime {

// The attribute's values (include/dtmpi/dtmpi.h: DTMPI_BUFFER_HOST,
// DTMPI_BUFFER_DEVICE(n)).
inline constexpr intptr_t kBufferHost = -1;

// Records `value` for `type`. False (nothing recorded) for a value that names
// no usable memory: not DTMPI_BUFFER_HOST, nor a device this process has.
bool set_buffer_hint(MPI_Datatype type, intptr_t value);
void drop_buffer_hint(MPI_Datatype type);

// Where a buffer of `type` at `p` lives: the attribute's answer where the
// type has one, else pointer_info(p). One relaxed load more than
// pointer_info while no type has the attribute.
namespace buffer_hint_detail {
extern std::atomic<size_t> g_hinted_types __attribute__((visibility("hidden")));  // types with the attribute now
extern std::atomic<uint64_t> g_generation __attribute__((visibility("hidden")));  // bumped by every change
// The last answers of this thread, valid while the generation is unchanged:
// a call with a hinted type then takes no lock (a shared lock costs ~25 ns,
// a tenth of a host message) and, read inline, no call (issue 29).
struct ThreadHints {
  static constexpr int kWays = 4;
  struct Entry {
    uint64_t key = 0, generation = 0;
    bool hinted = false;
    PointerInfo info;
  } entries[kWays];
  int next = 0;
};
extern __thread ThreadHints t_hints __attribute__((tls_model("initial-exec")));
// MPI_Datatype is a pointer in Open MPI and an int in MPICH (a template, so
// that the branch not taken is not compiled).
template <class Handle>
[[gnu::always_inline]] inline uint64_t key_of(Handle t) {
  if constexpr (std::is_pointer_v<Handle>)
    return reinterpret_cast<uintptr_t>(t);
  else
    return static_cast<uint64_t>(static_cast<uint32_t>(t));
}
// This thread's remembered answer for `type`, or null (ask buffer_info).
[[gnu::always_inline]] inline const ThreadHints::Entry* remembered(MPI_Datatype type) {
  const uint64_t key = key_of(type), gen = g_generation.load(std::memory_order_acquire);
  for (const auto& e : t_hints.entries)
    if (e.generation == gen && e.key == key) return &e;
  return nullptr;
}
PointerInfo buffer_info_hinted(const void* p, MPI_Datatype type);
}  // namespace buffer_hint_detail
// Always inlined, as pointer_info: out of line, a host call paid ~10 ns for
// the call and its frame (dtmpi-bench latency's pieces, issue 29).
[[gnu::always_inline]] inline PointerInfo buffer_info(const void* p, MPI_Datatype type) {
  if (buffer_hint_detail::g_hinted_types.load(std::memory_order_relaxed) == 0) return pointer_info(p);
  return buffer_hint_detail::buffer_info_hinted(p, type);
}

// True where buffer_info(p, type) says host memory without a call: while no
// type has the attribute, pointer_kind.hpp's host_without_call; else where
// this thread remembers `type`'s answer: "host" by the attribute, or no
// attribute and host_without_call. False: ask buffer_info.
[[gnu::always_inline]] inline bool buffer_host_without_call(const void* p, MPI_Datatype type) {
  namespace d = buffer_hint_detail;
  if (d::g_hinted_types.load(std::memory_order_relaxed) == 0) return host_without_call(p);
  const d::ThreadHints::Entry* e = d::remembered(type);
  if (!e) return false;
  return e->hinted ? !on_gpu(e->info) : host_without_call(p);
}

}  // namespace dtmpi::runtime
