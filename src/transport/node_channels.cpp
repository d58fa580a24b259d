#include "transport/node_channels.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <limits>

#include "base/system_mpi.hpp"

namespace dtmpi::transport {
namespace {

size_t line_up(size_t n) { return (n + 63) / 64 * 64; }
// A channel's share of its receiver's area: ready and consumed on lines of
// their own (one writer each), then its two buffers.
size_t channel_bytes(size_t bytes) { return 2 * sizeof(PaddedFlag) + 2 * line_up(bytes); }

constexpr int64_t kNoChannel = -1;

}  // namespace

Result<std::unique_ptr<NodeChannels>> NodeChannels::create(MPI_Comm node, const std::vector<size_t>& inbound) {
  int rank = 0, size = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_rank)(node, &rank));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_size)(node, &size));
  const auto n = static_cast<size_t>(size);
  // a wrong length is this library's bug, but every rank still takes part in
  // every collective below: it only leaves this rank without channels
  const bool sane = inbound.size() == n;
  uint64_t mine = 0;
  if (sane)
    for (size_t r = 0; r < n; ++r) mine += inbound[r] ? channel_bytes(inbound[r]) : 0;
  std::vector<uint64_t> area(n);
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(&mine, 1, MPI_UINT64_T, area.data(), 1, MPI_UINT64_T, node));
  uint64_t total = 0, my_start = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r == static_cast<size_t>(rank)) my_start = total;
    total += area[r];
  }
  if (total > std::numeric_limits<size_t>::max() / 2) return Error{MPI_ERR_NO_MEM, "dtmpi: node channels too large"};
  std::unique_ptr<NodeChannels> c(new NodeChannels);
  c->bytes_ = static_cast<size_t>(std::max<uint64_t>(total, 64));
  auto base = map_node_shared(node, c->bytes_);
  if (!base) return base.error();
  if (!base.value()) return std::unique_ptr<NodeChannels>();
  c->base_ = base.value();

  // where each inbound channel starts in this rank's area, told to its
  // sender: {offset in the segment, bytes} per rank, kNoChannel for none
  std::vector<int64_t> in(2 * n, kNoChannel), out(2 * n, kNoChannel);
  uint64_t at = my_start;
  c->from_.resize(n);
  c->to_.resize(n);
  auto end_at = [&](uint64_t offset, size_t bytes) {
    ChannelEnd e;
    char* p = c->base_ + offset;
    e.ready = reinterpret_cast<PaddedFlag*>(p);
    e.consumed = reinterpret_cast<PaddedFlag*>(p + sizeof(PaddedFlag));
    e.buffer[0] = p + 2 * sizeof(PaddedFlag);
    e.buffer[1] = e.buffer[0] + line_up(bytes);
    e.bytes = bytes;
    return e;
  };
  if (sane)
    for (size_t r = 0; r < n; ++r) {
      if (!inbound[r]) continue;
      c->from_[r] = end_at(at, inbound[r]);
      in[2 * r] = static_cast<int64_t>(at);
      in[2 * r + 1] = static_cast<int64_t>(inbound[r]);
      at += channel_bytes(inbound[r]);
    }
  DTMPI_MPI_CHECK(REAL(MPI_Alltoall)(in.data(), 2, MPI_INT64_T, out.data(), 2, MPI_INT64_T, node));
  for (size_t r = 0; r < n; ++r)
    if (out[2 * r] != kNoChannel) c->to_[r] = end_at(static_cast<uint64_t>(out[2 * r]), static_cast<size_t>(out[2 * r + 1]));
  if (!sane) return Error{MPI_ERR_INTERN, "dtmpi: NodeChannels::create with a list of the wrong length"};
  return c;
}

NodeChannels::~NodeChannels() {
  if (base_) munmap(base_, bytes_);
}

void NodeChannels::release_senders() {
  for (const ChannelEnd& e : from_)
    if (e.open()) NodeSegment::signal(*e.consumed, std::numeric_limits<uint64_t>::max() / 2);
}

}  // namespace dtmpi::transport
