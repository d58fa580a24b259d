// One-way channels between the ranks of one node through one shared-memory
// segment (map_node_shared, transport/onesided.hpp), for traffic that repeats
// with the same sizes every round -- dtmpi::stencil's halo exchange between
// host-memory ranks of a node (docs/stencil.md, "Shared memory").
//
// Every channel lives in its receiver's area of the segment: two
// cache-line flags and two buffers. The sender of round `seq` (1, 2, ...)
// writes straight into buffer seq % 2 -- no message, no copy of its own --
// and raises `ready` to seq; the receiver waits for ready >= seq, reads the
// bytes in place and raises `consumed` to seq. A sender may write round seq
// once consumed >= seq - 2: the buffer it is about to overwrite was read.
// Two buffers let a fast sender fill round seq + 1 while its receiver still
// reads round seq; it waits only when it runs two rounds ahead. Flags only
// grow (NodeSegment::signal), so none is ever reset.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "transport/onesided.hpp"

namespace dtmpi::transport {

// One end of a channel; a default one (bytes 0, no flags) is no channel.
struct ChannelEnd {
  PaddedFlag* ready = nullptr;     // raised by the sender: round `value` is in its buffer
  PaddedFlag* consumed = nullptr;  // raised by the receiver: round `value` has been read
  char* buffer[2] = {nullptr, nullptr};
  size_t bytes = 0;
  bool open() const { return ready != nullptr; }
};

class NodeChannels {
 public:
  // Collective over `node` (ranks of one node; every rank calls it).
  // inbound[r]: the bytes this rank receives from node rank r per round (0:
  // no channel from r). Every rank gets its channels, or every rank gets null
  // (the ranks span nodes, or shared memory failed on any of them).
  static Result<std::unique_ptr<NodeChannels>> create(MPI_Comm node, const std::vector<size_t>& inbound);
  ~NodeChannels();
  NodeChannels(const NodeChannels&) = delete;
  NodeChannels& operator=(const NodeChannels&) = delete;

  const ChannelEnd& from(int r) const { return from_[static_cast<size_t>(r)]; }  // node rank r -> this one
  const ChannelEnd& to(int r) const { return to_[static_cast<size_t>(r)]; }      // this one -> node rank r

  // Sender. writable: round seq may be written now (never blocks; a caller
  // that must wait polls it, doing its own progress between polls);
  // write_buffer answers the buffer (only once writable); end_write publishes it.
  static bool writable(const ChannelEnd& c, uint64_t seq) { return seq <= 2 || NodeSegment::test(*c.consumed, seq - 2); }
  static char* write_buffer(const ChannelEnd& c, uint64_t seq) { return c.buffer[seq % 2]; }
  static void end_write(const ChannelEnd& c, uint64_t seq) { NodeSegment::signal(*c.ready, seq); }
  // Receiver. readable: round seq is there (never blocks); read() answers its
  // bytes (only once readable); end_read hands the buffer back to the sender.
  static bool readable(const ChannelEnd& c, uint64_t seq) { return NodeSegment::test(*c.ready, seq); }
  static const char* read(const ChannelEnd& c, uint64_t seq) { return c.buffer[seq % 2]; }
  static void end_read(const ChannelEnd& c, uint64_t seq) { NodeSegment::signal(*c.consumed, seq); }

  // An abandoned receiver (its round left unread: an exception between the
  // halves of an exchange) releases its senders for good, so that none of
  // them waits forever for a buffer nobody will read.
  void release_senders();

 private:
  NodeChannels() = default;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  std::vector<ChannelEnd> from_, to_;
};

}  // namespace dtmpi::transport
