// The multi-message descriptor's wire format (src/transport/descriptor.hpp):
// every field a receiver acts on survives the round trip, and a message that
// is not a descriptor for this envelope -- another sender, receiver or tag, a
// changed byte, an unknown wire or signal kind, a size below kInPlaceMin (IPC) or kMultiMin (pipelined) -- is
// never taken for one.
#include <gtest/gtest.h>

#include <cstring>

#include "transport/descriptor.hpp"

namespace tp = dtmpi::transport;

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
  d.ready.kind = tp::IpcSignal::Kind::kCounter;
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
  EXPECT_EQ(got->ready.kind, tp::IpcSignal::Kind::kCounter);
  EXPECT_EQ(std::memcmp(got->ready.handle, d.ready.handle, 64), 0);
  EXPECT_EQ(got->ready.buffer_id, d.ready.buffer_id);
  EXPECT_EQ(got->ready.value, d.ready.value);
  EXPECT_EQ(got->ready.gpu, d.ready.gpu);
}

TEST(Descriptor, PipelinedRoundTripKeepsChunkSize) {
  tp::Descriptor d = ipc_descriptor();
  d.wire = tp::Wire::kPipelined;
  d.ready = tp::IpcSignal{};
  d.chunk_bytes = 2 << 20;
  unsigned char wire[tp::kDescriptorBytes];
  tp::encode(d, wire);
  auto got = tp::decode(wire, 5, 9, 123456);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->wire, tp::Wire::kPipelined);
  EXPECT_EQ(got->chunk_bytes, 2 << 20);
  EXPECT_EQ(got->ready.kind, tp::IpcSignal::Kind::kNone);
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
  d.ready.kind = static_cast<tp::IpcSignal::Kind>(3);
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value());
  d = ipc_descriptor();
  d.wire = static_cast<tp::Wire>(3);
  tp::encode(d, wire);
  EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value());
}

TEST(Descriptor, ChunkCountSurvivesAndOutOfRangeCountsAreRefused) {
  tp::Descriptor d = ipc_descriptor();
  unsigned char wire[tp::kDescriptorBytes];
  d.chunks = 3;
  tp::encode(d, wire);
  auto got = tp::decode(wire, 5, 9, 123456);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->chunks, 3);
  for (int bad : {0, tp::kMaxChunks + 1}) {
    d.chunks = bad;
    tp::encode(d, wire);
    EXPECT_FALSE(tp::decode(wire, 5, 9, 123456).has_value()) << bad << " chunks";
  }
}

// The schedule both ends compute: ascending ends that cover the message
// exactly, in 64-KiB grains but for the last, each chunk (but the last) four
// times the one before, at most kMaxChunks.
TEST(Descriptor, ChunkEndsCoverTheMessageInGrowingChunks) {
  for (int64_t total : {int64_t{1}, int64_t{100000}, int64_t{1} << 20, int64_t{12} << 20, (int64_t{12} << 20) + 7,
                        int64_t{64} << 20, int64_t{3} << 30}) {
    int64_t ends[tp::kMaxChunks];
    const int n = tp::chunk_ends(total, ends);
    ASSERT_GE(n, 1);
    ASSERT_LE(n, tp::kMaxChunks);
    EXPECT_EQ(ends[n - 1], total);
    for (int k = 0; k < n; ++k) {
      const int64_t lo = k ? ends[k - 1] : 0;
      EXPECT_GT(ends[k], lo) << total;
      if (k + 1 < n) {
        EXPECT_EQ(ends[k] % (64 * 1024), 0) << total;
        if (k > 0) {
          EXPECT_EQ(ends[k] - lo, 4 * (lo - (k > 1 ? ends[k - 2] : 0))) << total;
        }
      }
    }
  }
  int64_t ends[tp::kMaxChunks];
  ASSERT_EQ(tp::chunk_ends(int64_t{64} << 20, ends), 3);  // 4 + 16 + 44 MiB
  EXPECT_EQ(ends[0], int64_t{4} << 20);
  EXPECT_EQ(ends[1], int64_t{20} << 20);
}
