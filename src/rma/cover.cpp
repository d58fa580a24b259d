// Which blocking collectives take their non-blocking form while dtmpi's
// windows exist (interpose/p2p_route.hpp): only those on a communicator all
// of whose processes are members of one window, so that every rank of the
// collective decides alike. Before (session 27's review), every rank with a
// window converted every blocking collective: a window on a sub-communicator
// then made its members call MPI_Iallreduce where the others called
// MPI_Allreduce -- which do not match (MPI-4 section 6.12), and hung.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "base/system_mpi.hpp"
#include "rma/window.hpp"

namespace dtmpi::rma {

namespace {

std::atomic<uint64_t> g_epoch{1};

struct CoverCache {
  uint64_t epoch = 0;
  bool covered = false;
};

int delete_cache(MPI_Comm, int, void* value, void*) {
  delete static_cast<CoverCache*>(value);
  return MPI_SUCCESS;
}

int cache_keyval() {
  static const int k = [] {
    int kv = MPI_KEYVAL_INVALID;
    if (REAL(MPI_Comm_create_keyval)(MPI_COMM_NULL_COPY_FN, delete_cache, &kv, nullptr) != MPI_SUCCESS)
      return static_cast<int>(MPI_KEYVAL_INVALID);
    return kv;
  }();
  return k;
}

}  // namespace

std::vector<int> world_members_of(MPI_Comm comm) {
  int inter = 0;
  if (comm == MPI_COMM_NULL || REAL(MPI_Comm_test_inter)(comm, &inter) != MPI_SUCCESS || inter) return {};
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  if (REAL(MPI_Comm_group)(comm, &group) != MPI_SUCCESS) return {};
  int n = 0;
  REAL(MPI_Group_size)(group, &n);
  std::vector<int> ranks(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
  const bool ok = REAL(MPI_Comm_group)(MPI_COMM_WORLD, &world) == MPI_SUCCESS &&
                  REAL(MPI_Group_translate_ranks)(group, n, ranks.data(), world, out.data()) == MPI_SUCCESS;
  REAL(MPI_Group_free)(&group);
  if (world != MPI_GROUP_NULL) REAL(MPI_Group_free)(&world);
  if (!ok || std::find(out.begin(), out.end(), MPI_UNDEFINED) != out.end()) return {};
  std::sort(out.begin(), out.end());
  return out;
}

void windows_changed() { g_epoch.fetch_add(1, std::memory_order_acq_rel); }

bool windows_cover(MPI_Comm comm) {
  if (g_windows.load(std::memory_order_relaxed) == 0 || comm == MPI_COMM_NULL) return false;
  const uint64_t epoch = g_epoch.load(std::memory_order_acquire);
  const int kv = cache_keyval();
  CoverCache* cache = nullptr;
  int found = 0;
  if (kv != MPI_KEYVAL_INVALID && REAL(MPI_Comm_get_attr)(comm, kv, &cache, &found) == MPI_SUCCESS && found &&
      cache->epoch == epoch)
    return cache->covered;
  const std::vector<int> mine = world_members_of(comm);
  bool covered = false;
  if (!mine.empty()) {
    RmaLock lock;  // the window list's
    for (const Window* w : window_list())
      if (!w->world_members.empty() &&
          std::includes(w->world_members.begin(), w->world_members.end(), mine.begin(), mine.end())) {
        covered = true;
        break;
      }
  }
  if (kv != MPI_KEYVAL_INVALID) {
    if (!found || !cache) {
      cache = new CoverCache;
      if (REAL(MPI_Comm_set_attr)(comm, kv, cache) != MPI_SUCCESS) {
        delete cache;
        return covered;
      }
    }
    cache->epoch = epoch;
    cache->covered = covered;
  }
  return covered;
}

}  // namespace dtmpi::rma
