// One-sided primitives between the processes of one node, for dtmpi's own
// collectives (src/coll): a shared-memory segment per communicator, created
// once by the node leader with POSIX shm_open + mmap (its name broadcast on the
// communicator; unlinked as soon as every member has mapped it, so a crashed
// job leaves nothing behind). Each rank owns one area of the segment: a few
// cache-line-padded flags and a scratch buffer in kScratchSlots slots (the
// collective's sequence number modulo kScratchSlots: so many collectives of
// a communicator may be in flight, or run ahead on the root of a loose
// sequence of calls, before a writer waits for its readers). MPI_Win_allocate_shared is not used: Open
// MPI 4.1's default one-sided component fails it where dtmpi must work.
//
// The primitives are the thesis's (research digest seed-001, section 4.1):
// put / get (memcpy into or out of a peer's scratch), signal (a release store
// of a monotonic value into a peer's flag: a "signaling put" when it follows
// a put), add (a counting put: atomic add on a peer's counter) and the
// non-blocking test / blocking wait on a flag. Flags only ever grow (values
// are (sequence << kPhaseBits) | phase), so no flag is ever reset and a late
// reader can never mistake an old value for a new one.
//
// Only processes of one node: a communicator that spans nodes has no segment
// (create() answers nullptr) and its collectives stay the system MPI's; a
// backend over the system MPI's point-to-point for other nodes, and one over
// CUDA IPC for device buffers, are meant to implement the same five verbs.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <memory>

#include "base/result.hpp"

namespace dtmpi::transport {

inline constexpr int kPhaseBits = 8;
// The flag value of `phase` of collective number `seq`.
inline constexpr uint64_t flag_value(uint64_t seq, unsigned phase) { return (seq << kPhaseBits) | phase; }

// One cache line each, so a writer never invalidates a neighbour's flag.
struct alignas(64) PaddedFlag {
  std::atomic<uint64_t> v{0};
  char pad[64 - sizeof(std::atomic<uint64_t>)];
};

// Flags of one rank's area: `done` (the last sequence number this rank has
// finished: peers read it to know when scratch may be reused), `ready`
// (written by the owner: its scratch holds data of a phase), `counter`
// (atomic adds by peers) and `in[k]` (written by exactly one peer per round).
inline constexpr int kInFlags = 32;
inline constexpr unsigned kScratchSlots = 4;
// Flags and a few bytes in the same cache lines (NCCL's LL128 protocol does
// the same on GPUs): each line holds 56 bytes and its own copy of the flag,
// so a reader that sees every line's flag has the data without another
// transfer, and the lines travel in parallel -- for the latency-bound sizes,
// one round of line transfers instead of a flag and then the data. One slot
// in a ring of kInlineSlots, reused under the scratch slots' rule with its
// own depth (CommState::may_write): an operation whose bytes all travel
// inline may run that many sequence numbers ahead of the slowest peer, so a
// root of back-to-back small collectives re-reads its peers' `done` flags
// about once every kInlineSlots calls instead of every call or two.
inline constexpr unsigned kInlineSlots = 16;
inline constexpr size_t kInlineLineBytes = 56;
inline constexpr size_t kInlineLines = 6;
inline constexpr size_t kInlineBytes = kInlineLineBytes * kInlineLines;  // 336
struct alignas(64) InlineLine {
  std::atomic<uint64_t> v{0};
  char data[kInlineLineBytes];
};
struct InlineSlot {
  InlineLine line[kInlineLines];
};
struct RankFlags {
  PaddedFlag done, ready, counter;
  PaddedFlag in[kInFlags];
  InlineSlot inline_slot[kInlineSlots];
};

class NodeSegment {
 public:
  // Collective over `comm` (an intracommunicator): every rank gets a segment,
  // or every rank gets null (spans nodes, or shared memory failed somewhere:
  // all ranks agree by an allreduce of the outcome). `scratch` bytes per slot.
  static Result<std::unique_ptr<NodeSegment>> create(MPI_Comm comm, size_t scratch);
  ~NodeSegment();
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t scratch_bytes() const { return scratch_; }

  RankFlags& flags(int r) const { return *reinterpret_cast<RankFlags*>(area(r)); }
  // The scratch slot of sequence number `seq` in rank r's area.
  char* scratch(int r, uint64_t seq) const { return area(r) + flags_bytes() + (seq % kScratchSlots) * scratch_; }

  // The inline slot of sequence number `seq` in rank r's area.
  InlineSlot& inline_slot(int r, uint64_t seq) const { return flags(r).inline_slot[seq % kInlineSlots]; }
  // A put and its signal in the same lines (n <= kInlineBytes): each line's
  // bytes, then that line's flag (release). The writer owns the slot.
  static void put_inline(InlineSlot& s, const void* src, size_t n, uint64_t value) {
    const char* from = static_cast<const char*>(src);
    for (size_t i = 0, at = 0; at < n || i == 0; ++i, at += kInlineLineBytes) {
      std::memcpy(s.line[i].data, from + at, std::min(kInlineLineBytes, n - at));
      s.line[i].v.store(value, std::memory_order_release);
    }
  }
  // The matching test and get: false until every line's flag reaches
  // `at_least` (then all of them carry this operation's bytes).
  static bool get_inline(const InlineSlot& s, uint64_t at_least, void* dst, size_t n) {
    const size_t lines = n == 0 ? 1 : (n + kInlineLineBytes - 1) / kInlineLineBytes;
    for (size_t i = 0; i < lines; ++i)
      if (s.line[i].v.load(std::memory_order_acquire) < at_least) return false;
    char* to = static_cast<char*>(dst);
    for (size_t i = 0, at = 0; at < n; ++i, at += kInlineLineBytes)
      std::memcpy(to + at, s.line[i].data, std::min(kInlineLineBytes, n - at));
    return true;
  }

  // The verbs. put/get move bytes into / out of a peer's scratch (plain
  // copies: ordering comes from the signal that follows or the wait before).
  static void put(char* remote, const void* src, size_t n);
  static void get(void* dst, const char* remote, size_t n);
  // A monotonic maximum, not a store: a flag some algorithm lets two peers
  // write (in different collectives) never goes back.
  static void signal(PaddedFlag& f, uint64_t value) {
    uint64_t now = f.v.load(std::memory_order_relaxed);
    while (now < value && !f.v.compare_exchange_weak(now, value, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }
  static void add(PaddedFlag& f, uint64_t n) { f.v.fetch_add(n, std::memory_order_acq_rel); }
  static bool test(const PaddedFlag& f, uint64_t at_least) {
    return f.v.load(std::memory_order_acquire) >= at_least;
  }
  // Spins briefly, then yields the core (ranks may outnumber cores: pure
  // spinning would starve the very peer being waited for).
  static void wait(const PaddedFlag& f, uint64_t at_least);

 private:
  NodeSegment() = default;
  static size_t flags_bytes() { return (sizeof(RankFlags) + 63) / 64 * 64; }
  size_t area_bytes() const { return flags_bytes() + kScratchSlots * scratch_; }
  char* area(int r) const { return base_ + static_cast<size_t>(r) * area_bytes(); }

  char* base_ = nullptr;
  size_t bytes_ = 0;
  size_t scratch_ = 0;
  int rank_ = 0, size_ = 0;
};

// Collective over `comm`: one POSIX shared-memory object of `bytes` bytes,
// created by rank 0 and mapped by every rank (its name unlinked as soon as
// all have mapped it, so a crashed job leaves nothing behind), or null on
// every rank -- the ranks span nodes (real ones, or DTMPI_RANKS_PER_NODE's),
// or creating or mapping failed on any of them: all agree by an allreduce.
// The pages start zeroed; the caller unmaps them (munmap(p, bytes)).
Result<char*> map_node_shared(MPI_Comm comm, size_t bytes);

// One step of a polling loop: a pause for the first spins, then sched_yield.
void backoff(int& spins);

}  // namespace dtmpi::transport
