#include "coll/comm_state.hpp"

#include <algorithm>

#include "base/system_mpi.hpp"
#include "coll/hierarchy.hpp"
#include "runtime/config.hpp"

namespace dtmpi::coll {

namespace {

using Holder = std::shared_ptr<CommState>;

int delete_state(MPI_Comm, int, void* value, void*) {
  delete static_cast<Holder*>(value);
  return MPI_SUCCESS;
}

// Created at the first collective dtmpi serves (after MPI_Init); freed by the
// MPI with the communicators at MPI_Finalize.
int keyval() {
  static int k = [] {
    int kv = MPI_KEYVAL_INVALID;
    if (!DTMPI_MPI_WARN(REAL(MPI_Comm_create_keyval)(MPI_COMM_NULL_COPY_FN, delete_state, &kv, nullptr)))
      return static_cast<int>(MPI_KEYVAL_INVALID);
    return kv;
  }();
  return k;
}

}  // namespace

bool CommState::may_write(uint64_t seq, uint64_t k) {
  if (seq <= min_peer_done + k) return true;
  uint64_t low = UINT64_MAX;
  for (int r = 0; r < size; ++r)
    if (r != rank) low = std::min(low, seg->flags(r).done.v.load(std::memory_order_acquire));
  min_peer_done = size > 1 ? low : finished;
  return seq <= min_peer_done + k;
}

Result<std::shared_ptr<CommState>> state_for(MPI_Comm comm, bool may_create) {
  const int kv = keyval();
  if (kv == MPI_KEYVAL_INVALID) return Holder();
  void* value = nullptr;
  int found = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_get_attr)(comm, kv, &value, &found));
  if (found) return *static_cast<Holder*>(value);
  if (!may_create) return Holder();
  const auto scratch = static_cast<size_t>(runtime::config().coll_scratch);
  auto st = std::make_shared<CommState>();
  REAL(MPI_Comm_rank)(comm, &st->rank);
  REAL(MPI_Comm_size)(comm, &st->size);
  auto seg = transport::NodeSegment::create(comm, scratch);
  if (!seg) return seg.error();
  st->seg = std::move(seg.value());
  if (st->seg) {  // every rank got one (create() agrees), so every rank creates the lane's
    auto lane = std::make_shared<CommState>();
    lane->rank = st->rank;
    lane->size = st->size;
    auto lane_seg = transport::NodeSegment::create(comm, scratch);
    if (!lane_seg) return lane_seg.error();
    lane->seg = std::move(lane_seg.value());
    if (lane->seg) st->nonblocking = std::move(lane);
  }
  if (!st->seg && st->size > 1) {  // spans nodes: the hierarchy (collective, as the segment's creation)
    auto h = make_hierarchy(comm);
    if (!h) return h.error();
    st->hier = std::shared_ptr<Hierarchy>(std::move(h.value()));
  }
  auto* holder = new Holder(st);
  const int rc = REAL(MPI_Comm_set_attr)(comm, kv, holder);
  if (rc != MPI_SUCCESS) {
    delete holder;
    return Error{rc, "MPI_Comm_set_attr (collectives' state)"};
  }
  return st;
}

}  // namespace dtmpi::coll
