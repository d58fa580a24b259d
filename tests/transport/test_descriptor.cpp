// The multi-message descriptor's wire format (src/transport/descriptor.hpp):
// every field a receiver acts on survives the round trip, and a message that
// is not a descriptor for this envelope -- another sender, receiver or tag, a
// changed byte, an unknown wire or signal kind, a size below kInPlaceMin (IPC) or kMultiMin (pipelined) -- is
// never taken for one.
#include <gtest/gtest.h>

#include <cstring>

#include "transport/descriptor.hpp"

namespace tp = dtmpi::transport;
namespace rt = dtmpi::runtime;

namespace {

tp::Descriptor ipc_descriptor() {
  tp::Descriptor d;
  d.wire = tp::Wire::kIpc;
  d.total_bytes = int64_t{3} << 30;
  d.transfer_id = 77;
  d.sender_world = 5;
  d.receiver_world = 9;
  d.user_tag = 123456;
  for (int i = 0; i < 64; ++i) d.region.handle[i] = static_cast<unsigned char>(i * 3 + 1);
  d.region.buffer_id = 0x1122334455667788ULL;
  d.region.offset = 4096;
  d.ready.kind = rt::IpcSignal::Kind::kCounter;
  for (int i = 0; i < 64; ++i) d.ready.handle[i] = static_cast<unsigned char>(255 - i);
  d.ready.buffer_id = 0xa5a5a5a5deadbeefULL;
  d.ready.value = 0xfffffffffffffff0ULL;  // a counter near wrap-around
  d.ready.gpu = 0x9e3779b97f4a7c15ULL;
  return d;
}

}  // namespace

TEST(Descriptor, IpcRoundTripKeepsRegionAndReadySignal) {
  const tp::Descriptor d = ipc_descriptor();
  unsigned char wire[tp::kDescriptorBytes];
  tp::encode(d, wire);
  auto got = tp::decode(wire, 5, 9, 123456);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->wire, tp::Wire::kIpc);
  EXPECT_EQ(got->total_bytes, d.total_bytes);
  EXPECT_EQ(got->transfer_id, 77);
  EXPECT_EQ(std::memcmp(got->region.handle, d.region.handle, 64), 0);
  EXPECT_EQ(got->region.buffer_id, d.region.buffer_id);
  EXPECT_EQ(got->region.offset, 4096);
  EXPECT_EQ(got->ready.kind, rt::IpcSignal::Kind::kCounter);
  EXPECT_EQ(std::memcmp(got->ready.handle, d.ready.handle, 64), 0);
  EXPECT_EQ(got->ready.buffer_id, d.ready.buffer_id);
  EXPECT_EQ(got->ready.value, d.ready.value);
  EXPECT_EQ(got->ready.gpu, d.ready.gpu);
}

TEST(Descriptor, PipelinedRoundTripKeepsChunkSize) {
  tp::Descriptor d = ipc_descriptor();
  d.wire = tp::Wire::kPipelined;
  d.ready = rt::IpcSignal{};
  d.chunk_bytes = 2 << 20;
  unsigned char wire[tp::kDescriptorBytes];
  tp::encode(d, wire);
  auto got = tp::decode(wire, 5, 9, 123456);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->wire, tp::Wire::kPipelined);
  EXPECT_EQ(got->chunk_bytes, 2 << 20);
  EXPECT_EQ(got->ready.kind, rt::IpcSignal::Kind::kNone);
}

TEST(Descriptor, OtherEnvelopesAndAlteredBytesAreNotDescriptors) {
  const tp::Descriptor d = ipc_descriptor();
  unsigned char wire[tp::kDescriptorBytes];
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 4, 9, 123456).has_value());  // another sender
  EXPECT_FALSE(tp::decode(wire, 5, 8, 123456).has_value());  // another receiver
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123457).has_value());  // another tag
  for (int at = 0; at < tp::kDescriptorBytes; ++at) {        // any changed byte
    unsigned char bad[tp::kDescriptorBytes];
    std::memcpy(bad, wire, sizeof bad);
    bad[at] ^= 0x40;
    EXPECT_FALSE(tp::decode(bad, 5, 9, 123456).has_value()) << "byte " << at;
  }
  unsigned char zeros[tp::kDescriptorBytes] = {};
  EXPECT_FALSE(tp::decode(zeros, 5, 9, 123456).has_value());
}

TEST(Descriptor, UnknownKindsAndSmallSizesAreRefused) {
  tp::Descriptor d = ipc_descriptor();
  unsigned char wire[tp::kDescriptorBytes];
  d.total_bytes = tp::kInPlaceMin - 1;  // not even a collective's piece sent in place is this small
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value());
  d.total_bytes = tp::kInPlaceMin;  // an IPC descriptor may be a piece sent in place
  tp::encode(d, wire);
  EXPECT_TRUE(tp::decode(wire, 5, 9, 123456).has_value());
  d.wire = tp::Wire::kPipelined;  // pipelined transfers are point to point only
  d.total_bytes = tp::kMultiMin - 1;
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value());
  d.total_bytes = tp::kMultiMin;
  tp::encode(d, wire);
  EXPECT_TRUE(tp::decode(wire, 5, 9, 123456).has_value());
  d = ipc_descriptor();
  d.ready.kind = static_cast<rt::IpcSignal::Kind>(3);
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value());
  d = ipc_descriptor();
  d.wire = static_cast<tp::Wire>(3);
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value());
}
