// Where a buffer lives -- host, pinned host, device or managed memory -- as
// plain data. It lives here, below runtime, because the GPU pack dispatch
// (pack/gpu_dispatch.hpp) chooses by it; finding it out is runtime's work
// (runtime/pointer_kind.hpp, which names these types in runtime too).
#pragma once
#include <cstdint>

namespace dtmpi::pack {

enum class MemKind : uint8_t { kHost, kPinnedHost, kDevice, kManaged };

struct PointerInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;             // owning device (device/managed), or -1
  void* device_ptr = nullptr;  // for pinned host memory: its device-side address
};

inline bool on_gpu(const PointerInfo& p) {
  return p.kind == MemKind::kDevice || p.kind == MemKind::kManaged;
}

inline const char* kind_name(MemKind k) {
  switch (k) {
    case MemKind::kHost: return "host";
    case MemKind::kPinnedHost: return "pinned host";
    case MemKind::kDevice: return "device";
    case MemKind::kManaged: return "managed";
  }
  return "?";
}

}  // namespace dtmpi::pack
