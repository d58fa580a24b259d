// Synchronization of dtmpi's windows (rma/sync.hpp). Blocking waits progress
// every window meanwhile (wait_until), so a rank waiting for its own epoch
// still serves its peers' requests.
#include "rma/sync.hpp"

#include <atomic>

#include "base/system_mpi.hpp"
#include "transport/engine.hpp"

namespace dtmpi::rma {
namespace {

// Waits for a system-MPI request while progressing (a blocking collective
// would stall peers that wait for this rank's replies).
Status wait_request(MPI_Request& r) {
  for (;;) {
    int done = 0;
    DTMPI_MPI_CHECK(REAL(MPI_Test)(&r, &done, MPI_STATUS_IGNORE));
    if (done) return ok_status();
    progress();
    transport::poll();
    let_others_in();
  }
}

bool replies_all_done(const Window& w) {
  for (const Peer& p : w.peers)
    if (p.replies_done < p.replies_posted) return false;
  return true;
}

// The ranks of `group` in the window's communicator.
Result<std::vector<int>> ranks_of(const Window& w, MPI_Group group) {
  int n = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Group_size)(group, &n));
  std::vector<int> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = i;
  MPI_Group wg;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_group)(w.comm, &wg));
  Status s = DTMPI_MPI_STATUS(REAL(MPI_Group_translate_ranks)(group, n, in.data(), wg, out.data()));
  REAL(MPI_Group_free)(&wg);
  if (!s) return s.error();
  for (int r : out)
    if (r == MPI_UNDEFINED) return Error{MPI_ERR_GROUP, "a PSCW group with a process outside the window"};
  return out;
}

Status wait_replies(Window& w, int rank, uint64_t seq) {
  wait_until([&] { return reply_done(w, rank, seq); });
  return take_deferred(w);
}

Status control_with_reply(Window& w, int rank, Kind kind, int32_t arg, uint64_t* seq) {
  DTMPI_TRY(send_control(w, rank, kind, arg));
  auto s = expect_reply(w, rank, PendingReply{}, 8);
  if (!s) return s.error();
  *seq = s.value();
  return ok_status();
}

}  // namespace

Status fence_sync(Window& w) {
  std::vector<int> marks(static_cast<size_t>(w.size), 0);
  std::vector<uint64_t> sent(static_cast<size_t>(w.size), 0);
  for (int t = 0; t < w.size; ++t) sent[static_cast<size_t>(t)] = w.peers[static_cast<size_t>(t)].accumulates_sent;
  for (int t = 0; t < w.size; ++t) {
    Peer& p = w.peers[static_cast<size_t>(t)];
    if (!p.sent_in_epoch) continue;
    DTMPI_TRY(send_control(w, t, Kind::kFence));
    marks[static_cast<size_t>(t)] = 1;
    p.sent_in_epoch = false;
  }
  int expected = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  DTMPI_MPI_CHECK(REAL(MPI_Ireduce_scatter_block)(marks.data(), &expected, 1, MPI_INT, MPI_SUM, w.comm, &r));
  DTMPI_TRY(wait_request(r));
  // every origin's fence mark comes after its requests: once all are here,
  // every request of the epoch to this rank is applied
  wait_until([&] { return w.fence_marks >= expected && replies_all_done(w); });
  w.fence_marks -= expected;
  // this epoch's errors, taken now: a peer that left the barrier below first
  // may already send the next epoch's requests, whose errors belong to the
  // next synchronization (seen under load: a bad put of the next epoch
  // reported by the fence before it)
  Status epoch = take_deferred(w);
  // nobody starts the next epoch's requests before every target has applied
  // this one's (they would otherwise be applied among them)
  DTMPI_MPI_CHECK(REAL(MPI_Ibarrier)(w.comm, &r));
  DTMPI_TRY(wait_request(r));
  for (int t = 0; t < w.size; ++t)  // every target applied them
    accumulates_applied(w.peers[static_cast<size_t>(t)], sent[static_cast<size_t>(t)]);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return epoch;
}

Status fence(Window& w, int assert_flags) {
  RmaLock lock;
  // every fence synchronizes fully; the assertion only says whether it opens
  // an epoch for the operations that follow (MPI_ERR_RMA_SYNC otherwise)
  w.fence_epoch = (assert_flags & MPI_MODE_NOSUCCEED) == 0;
  return fence_sync(w);
}

Status post(Window& w, MPI_Group group, int assert_flags) {
  RmaLock lock;
  auto ranks = ranks_of(w, group);
  if (!ranks) return ranks.error();
  if (!w.post_group.empty()) return Error{MPI_ERR_RMA_SYNC, "MPI_Win_post while an exposure epoch is open"};
  w.post_group = ranks.value();
  if (assert_flags & MPI_MODE_NOCHECK) return ok_status();  // the origins' starts do not wait for it
  for (int r : w.post_group) DTMPI_TRY(send_control(w, r, Kind::kPost));
  return ok_status();
}

Status start(Window& w, MPI_Group group, int assert_flags) {
  RmaLock lock;
  auto ranks = ranks_of(w, group);
  if (!ranks) return ranks.error();
  if (!w.start_group.empty()) return Error{MPI_ERR_RMA_SYNC, "MPI_Win_start while an access epoch is open"};
  w.start_group = ranks.value();
  if (assert_flags & MPI_MODE_NOCHECK) return ok_status();
  // MPI_Win_start may block until the targets posted (MPI-3.1 11.5.2):
  // operations are then never applied before their target's post
  wait_until([&] {
    for (int r : w.start_group)
      if (w.peers[static_cast<size_t>(r)].posts == 0) return false;
    return true;
  });
  for (int r : w.start_group) --w.peers[static_cast<size_t>(r)].posts;
  return take_deferred(w);
}

Status complete(Window& w) {
  RmaLock lock;
  for (int r : w.start_group) DTMPI_TRY(send_control(w, r, Kind::kComplete));
  for (int r : w.start_group) {
    Peer& p = w.peers[static_cast<size_t>(r)];
    DTMPI_TRY(wait_replies(w, r, p.replies_posted));
    p.sent_in_epoch = false;
  }
  w.start_group.clear();
  return take_deferred(w);
}

namespace {
bool all_completed(const Window& w) {
  for (int r : w.post_group)
    if (w.peers[static_cast<size_t>(r)].completes == 0) return false;
  return true;
}
void consume_completes(Window& w) {
  for (int r : w.post_group) --w.peers[static_cast<size_t>(r)].completes;
  w.post_group.clear();
}
}  // namespace

Status wait(Window& w) {
  RmaLock lock;
  wait_until([&] { return all_completed(w); });
  consume_completes(w);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return take_deferred(w);
}

Status test(Window& w, int* flag) {
  RmaLock lock;
  progress();
  *flag = all_completed(w) ? 1 : 0;
  if (*flag) consume_completes(w);
  return take_deferred(w);
}

Status lock(Window& w, int lock_type, int rank, int assert_flags) {
  RmaLock lock;
  if (rank == MPI_PROC_NULL) return ok_status();
  if (rank < 0 || rank >= w.size) return Error{MPI_ERR_RANK, "MPI_Win_lock of an invalid rank"};
  if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
    return Error{MPI_ERR_LOCKTYPE, "MPI_Win_lock: not MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE"};
  Peer& p = w.peers[static_cast<size_t>(rank)];
  if (p.lock_type != 0) return Error{MPI_ERR_RMA_SYNC, "MPI_Win_lock of a rank this process holds locked"};
  p.lock_type = lock_type;
  p.lock_nocheck = (assert_flags & MPI_MODE_NOCHECK) != 0;
  if (p.lock_nocheck) return ok_status();
  uint64_t seq = 0;
  DTMPI_TRY(control_with_reply(w, rank, Kind::kLock, lock_type, &seq));
  return wait_replies(w, rank, seq);  // granted
}

Status unlock(Window& w, int rank) {
  RmaLock lock;
  if (rank == MPI_PROC_NULL) return ok_status();
  if (rank < 0 || rank >= w.size) return Error{MPI_ERR_RANK, "MPI_Win_unlock of an invalid rank"};
  Peer& p = w.peers[static_cast<size_t>(rank)];
  if (p.lock_type == 0) return Error{MPI_ERR_RMA_SYNC, "MPI_Win_unlock of a rank this process has not locked"};
  uint64_t seq = 0;
  const uint64_t sent = p.accumulates_sent;
  DTMPI_TRY(control_with_reply(w, rank, Kind::kUnlock, p.lock_nocheck ? 1 : 0, &seq));
  p.lock_type = 0;
  p.sent_since_flush = false;
  DTMPI_TRY(wait_replies(w, rank, seq));  // everything before it applied at the target
  accumulates_applied(p, sent);
  return ok_status();
}

Status lock_all(Window& w, int assert_flags) {
  RmaLock lock;
  for (const Peer& p : w.peers)
    if (p.lock_type != 0) return Error{MPI_ERR_RMA_SYNC, "MPI_Win_lock_all while holding a lock"};
  const bool nocheck = (assert_flags & MPI_MODE_NOCHECK) != 0;
  std::vector<uint64_t> seqs(static_cast<size_t>(w.size), 0);
  for (int r = 0; r < w.size; ++r) {
    Peer& p = w.peers[static_cast<size_t>(r)];
    p.lock_type = MPI_LOCK_SHARED;
    p.lock_nocheck = nocheck;
    if (!nocheck) DTMPI_TRY(control_with_reply(w, r, Kind::kLock, MPI_LOCK_SHARED, &seqs[static_cast<size_t>(r)]));
  }
  for (int r = 0; r < w.size; ++r)
    if (seqs[static_cast<size_t>(r)]) DTMPI_TRY(wait_replies(w, r, seqs[static_cast<size_t>(r)]));
  return ok_status();
}

Status unlock_all(Window& w) {
  RmaLock lock;
  std::vector<uint64_t> seqs(static_cast<size_t>(w.size), 0), sent(static_cast<size_t>(w.size), 0);
  for (int r = 0; r < w.size; ++r) {
    Peer& p = w.peers[static_cast<size_t>(r)];
    if (p.lock_type == 0) return Error{MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all"};
    sent[static_cast<size_t>(r)] = p.accumulates_sent;
    DTMPI_TRY(control_with_reply(w, r, Kind::kUnlock, p.lock_nocheck ? 1 : 0, &seqs[static_cast<size_t>(r)]));
    p.lock_type = 0;
    p.sent_since_flush = false;
  }
  for (int r = 0; r < w.size; ++r) {
    DTMPI_TRY(wait_replies(w, r, seqs[static_cast<size_t>(r)]));
    accumulates_applied(w.peers[static_cast<size_t>(r)], sent[static_cast<size_t>(r)]);
  }
  return ok_status();
}

Status flush(Window& w, int rank) {
  RmaLock lock;
  if (rank == MPI_PROC_NULL) return ok_status();
  if (rank < 0 || rank >= w.size) return Error{MPI_ERR_RANK, "MPI_Win_flush of an invalid rank"};
  Peer& p = w.peers[static_cast<size_t>(rank)];
  if (!p.sent_since_flush) return wait_replies(w, rank, p.replies_posted);
  uint64_t seq = 0;
  const uint64_t sent = p.accumulates_sent;
  DTMPI_TRY(control_with_reply(w, rank, Kind::kFlush, 0, &seq));
  p.sent_since_flush = false;
  DTMPI_TRY(wait_replies(w, rank, seq));
  accumulates_applied(p, sent);
  return ok_status();
}

Status flush_all(Window& w) {
  RmaLock lock;
  std::vector<uint64_t> seqs(static_cast<size_t>(w.size), 0), sent(static_cast<size_t>(w.size), 0);
  for (int r = 0; r < w.size; ++r) {
    Peer& p = w.peers[static_cast<size_t>(r)];
    sent[static_cast<size_t>(r)] = p.accumulates_sent;
    if (p.sent_since_flush) {
      DTMPI_TRY(control_with_reply(w, r, Kind::kFlush, 0, &seqs[static_cast<size_t>(r)]));
      p.sent_since_flush = false;
    } else {
      seqs[static_cast<size_t>(r)] = p.replies_posted;
    }
  }
  for (int r = 0; r < w.size; ++r) {
    DTMPI_TRY(wait_replies(w, r, seqs[static_cast<size_t>(r)]));
    accumulates_applied(w.peers[static_cast<size_t>(r)], sent[static_cast<size_t>(r)]);
  }
  return ok_status();
}

Status flush_local(Window& w, int rank) {
  RmaLock lock;
  if (rank == MPI_PROC_NULL) return ok_status();
  if (rank < 0 || rank >= w.size) return Error{MPI_ERR_RANK, "MPI_Win_flush_local of an invalid rank"};
  // puts and accumulates copied their origin buffers when issued
  return wait_replies(w, rank, w.peers[static_cast<size_t>(rank)].replies_posted);
}

Status flush_local_all(Window& w) {
  RmaLock lock;
  for (int r = 0; r < w.size; ++r) DTMPI_TRY(wait_replies(w, r, w.peers[static_cast<size_t>(r)].replies_posted));
  return ok_status();
}

}  // namespace dtmpi::rma
