// The first message of a multi-message transfer. It travels on the user's
// envelope (communicator, peer, tag), so the system MPI matches it exactly as
// it would match the whole message: wildcards and the non-overtaking order
// stay the system MPI's. Everything after it goes over the private
// communicator under the transfer's own tag.
//
// A receiver cannot tell a descriptor from a message of raw packed bytes by
// its envelope, so a descriptor identifies itself: it has exactly
// kDescriptorBytes, starts with a 128-bit magic and ends with a 128-bit keyed
// checksum over its fields and the envelope it was sent on. Multi-message
// methods are only used from kMultiMin bytes, far above kDescriptorBytes, so
// a receive bound below kMultiMin never needs to look.
#pragma once
#include <cstdint>
#include <optional>

#include "transport/ipc.hpp"
#include "transport/ipc_signal.hpp"

namespace dtmpi::transport {

inline constexpr int kDescriptorBytes = 232;
// Point-to-point receives look for descriptors from kMultiMin bytes; the
// pieces of a collective exchange from kInPlaceMin (transport::send_in_place):
// smaller descriptors than these are refused as not being descriptors.
inline constexpr int64_t kMultiMin = 64 * 1024;
inline constexpr int64_t kInPlaceMin = 512;
static_assert(kInPlaceMin >= kDescriptorBytes, "a piece's landing buffer must hold a descriptor");

enum class Wire : uint32_t {
  kPipelined = 1,  // payload follows in chunks on the private communicator
  kIpc = 2,        // payload readable at `region` over CUDA IPC; answer with an Ack
};

// Answers on ack_tag: what the receiver did with a kIpc transfer. kSendPayload
// (the region cannot be mapped here): the sender sends the packed bytes on the
// private communicator from its progress, and pipelines later transfers.
// kReadGated: read as kRead, by an unpack kernel on another GPU that polled
// the ready counter itself (pack::Gate) -- the only kind of reader a sender
// may batch its packs for (DTMPI_BATCH_PACKS, transport/send.cpp).
// kReadGated: read by a gated kernel on another GPU; kReadSameGpu: read by
// another process on the sender's own GPU (its sends there prefer the
// copy-engine one-message path, transport/method.cpp).
enum class Ack : int32_t { kRead = 0, kSendPayload = 1, kDiscard = 2, kReadGated = 3, kReadSameGpu = 4 };

struct Descriptor {
  Wire wire = Wire::kPipelined;
  int64_t total_bytes = 0;    // packed bytes of the whole message
  int32_t transfer_id = 0;
  int32_t sender_world = -1;
  int32_t receiver_world = -1;
  int32_t user_tag = 0;
  int64_t chunk_bytes = 0;    // kPipelined
  IpcRegion region;           // kIpc
  // kIpc: the packed bytes are ready once this signal (raised by the sender
  // after its pack) is; the receiver's stream waits for it on the GPU, so the
  // sender does not wait for its own pack before sending the descriptor
  IpcSignal ready;
  // kIpc, counter signals: the pack ran in `chunks` pieces (chunk_ends), chunk
  // k ready at value ready.value + k, so the receiver may read chunk 0 while
  // the sender still packs the rest
  int chunks = 1;
};

// Where the chunks of a message of `total` packed bytes end, in the one
// schedule both ends compute: the first a sixteenth (in 64-KiB grains), each
// next four times the last, the last to the end -- so each chunk's pack
// (local memory, several times faster than a read over NVLink or PCIe) is
// done before the receiver has read the one before. Returns how many.
inline constexpr int kMaxChunks = 4;
int chunk_ends(int64_t total, int64_t ends[kMaxChunks]);

// Writes `d` as exactly kDescriptorBytes bytes.
void encode(const Descriptor& d, unsigned char* out);
// The descriptor in `bytes` (kDescriptorBytes long) if it is one and was sent
// by `sender_world` to `receiver_world` with tag `tag`; nullopt otherwise.
std::optional<Descriptor> decode(const unsigned char* bytes, int sender_world, int receiver_world, int tag);

}  // namespace dtmpi::transport
