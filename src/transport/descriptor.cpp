#include "transport/descriptor.hpp"

#include <cstddef>
#include <algorithm>
#include <cstring>

namespace dtmpi::transport {
namespace {

constexpr uint64_t kMagic[2] = {0x64746d7069a5c3e1ULL, 0x5f6465736372ULL ^ 0x9e3779b97f4a7c15ULL};
constexpr uint16_t kVersion = 3;

// The fixed wire layout (little-endian host order: both ends run the same
// library on the same kind of node).
struct Wire_ {
  uint64_t magic[2];
  uint16_t version;
  uint16_t chunks;  // kIpc: the packed bytes are ready in this many chunks (chunk_ends)
  uint16_t wire;
  uint16_t ready_kind;
  int64_t total_bytes;
  int32_t transfer_id, sender_world, receiver_world, user_tag;
  int64_t chunk_bytes;  // kPipelined; kIpc: the ready signal's producer GPU (IpcSignal::gpu)
  unsigned char ipc_handle[64];
  uint64_t ipc_buffer_id;
  int64_t ipc_offset;
  unsigned char ready_handle[64];  // the ready signal (IpcSignal)
  uint64_t ready_buffer_id;
  uint64_t ready_value;
  uint64_t check[2];
};
static_assert(sizeof(Wire_) == kDescriptorBytes);

uint64_t mix(uint64_t h, uint64_t v) {  // splitmix64 step over the running hash
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

// Two independently keyed 64-bit hashes of everything before `check`.
void checksum(const Wire_& w, uint64_t out[2]) {
  const auto* p = reinterpret_cast<const unsigned char*>(&w);
  const size_t n = offsetof(Wire_, check);
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = 0;
    std::memcpy(&v, p + i, 8);
    a = mix(a, v);
    b = mix(b ^ 0xa4093822299f31d0ULL, v + i);
  }
  out[0] = a;
  out[1] = b;
}

}  // namespace

int chunk_ends(int64_t total, int64_t ends[kMaxChunks]) {
  constexpr int64_t kGrain = 64 * 1024;
  int64_t size = std::max<int64_t>((total / 16 + kGrain - 1) / kGrain * kGrain, kGrain);
  int n = 0;
  for (int64_t at = 0; at < total; size *= 4) {
    at = n + 1 == kMaxChunks ? total : std::min(at + size, total);
    ends[n++] = at;
  }
  return n;
}

void encode(const Descriptor& d, unsigned char* out) {
  Wire_ w{};
  w.magic[0] = kMagic[0];
  w.magic[1] = kMagic[1];
  w.version = kVersion;
  w.chunks = static_cast<uint16_t>(d.chunks);
  w.wire = static_cast<uint16_t>(d.wire);
  w.ready_kind = static_cast<uint16_t>(d.ready.kind);
  w.total_bytes = d.total_bytes;
  w.transfer_id = d.transfer_id;
  w.sender_world = d.sender_world;
  w.receiver_world = d.receiver_world;
  w.user_tag = d.user_tag;
  w.chunk_bytes = d.wire == Wire::kIpc ? static_cast<int64_t>(d.ready.gpu) : d.chunk_bytes;
  std::memcpy(w.ipc_handle, d.region.handle, sizeof(w.ipc_handle));
  w.ipc_buffer_id = d.region.buffer_id;
  w.ipc_offset = d.region.offset;
  std::memcpy(w.ready_handle, d.ready.handle, sizeof(w.ready_handle));
  w.ready_buffer_id = d.ready.buffer_id;
  w.ready_value = d.ready.value;
  checksum(w, w.check);
  std::memcpy(out, &w, sizeof(w));
}

std::optional<Descriptor> decode(const unsigned char* bytes, int sender_world, int receiver_world, int tag) {
  Wire_ w;
  std::memcpy(&w, bytes, sizeof(w));
  if (w.magic[0] != kMagic[0] || w.magic[1] != kMagic[1] || w.version != kVersion) return std::nullopt;
  uint64_t check[2];
  checksum(w, check);
  if (check[0] != w.check[0] || check[1] != w.check[1]) return std::nullopt;
  if (w.sender_world != sender_world || w.receiver_world != receiver_world || w.user_tag != tag)
    return std::nullopt;
  // pipelined transfers are point to point only; IPC ones may be a
  // collective's piece sent in place
  if (w.wire < 1 || w.wire > 2 || w.ready_kind > 2 || w.total_bytes < kInPlaceMin ||
      (w.wire == static_cast<uint16_t>(Wire::kPipelined) && w.total_bytes < kMultiMin) || w.chunks < 1 ||
      w.chunks > kMaxChunks)
    return std::nullopt;
  Descriptor d;
  d.wire = static_cast<Wire>(w.wire);
  d.chunks = w.chunks;
  d.total_bytes = w.total_bytes;
  d.transfer_id = w.transfer_id;
  d.sender_world = w.sender_world;
  d.receiver_world = w.receiver_world;
  d.user_tag = w.user_tag;
  if (d.wire == Wire::kIpc)
    d.ready.gpu = static_cast<uint64_t>(w.chunk_bytes);
  else
    d.chunk_bytes = w.chunk_bytes;
  std::memcpy(d.region.handle, w.ipc_handle, sizeof(w.ipc_handle));
  d.region.buffer_id = w.ipc_buffer_id;
  d.region.offset = w.ipc_offset;
  d.ready.kind = static_cast<IpcSignal::Kind>(w.ready_kind);
  std::memcpy(d.ready.handle, w.ready_handle, sizeof(w.ready_handle));
  d.ready.buffer_id = w.ready_buffer_id;
  d.ready.value = w.ready_value;
  return d;
}

}  // namespace dtmpi::transport
