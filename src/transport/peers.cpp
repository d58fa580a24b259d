#include "transport/peers.hpp"

#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/footprint.hpp"
#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/system_info.hpp"
#include "transport/predict.hpp"

namespace dtmpi::transport {
namespace {

struct PeerFacts {
  int32_t node;  // world rank of the lowest rank on the same node
  int32_t gpu;   // 1 if that rank uses a GPU
};

std::mutex g_no_ipc_mu;
std::vector<int> g_no_ipc;  // peers whose IPC regions could not be mapped

struct Peers {
  bool ready = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int32_t id_limit = 16383;  // data_tag/ack_tag stay below the tag upper bound
  std::vector<PeerFacts> facts;
  // per world rank: it has read one of our IPC regions (asked on every
  // device-method send: a load, no lock)
  std::unique_ptr<std::atomic<bool>[]> read_by;
  std::unique_ptr<std::atomic<bool>[]> read_gated_by;
  std::unique_ptr<std::atomic<bool>[]> same_gpu;
  bool descriptors = false;
  bool cuda_aware = false;
  int keyval = MPI_KEYVAL_INVALID;
  std::atomic<int32_t> next_id{0};
};

Peers& peers() {
  static auto* p = new Peers;
  return *p;
}

// Rank translation of one communicator, kept as an attribute on it.
struct RankMap {
  std::vector<int> world;
};
std::atomic<int64_t> g_rank_maps{0}, g_rank_map_entries{0};  // live maps, their ranks (footprint)

int delete_rank_map(MPI_Comm, int, void* value, void*) {
  auto* map = static_cast<RankMap*>(value);
  g_rank_maps.fetch_sub(1);
  g_rank_map_entries.fetch_sub(static_cast<int64_t>(map->world.size()));
  delete map;
  return MPI_SUCCESS;
}

// The per-peer arrays are dtmpi's only structures sized by the job: 11 bytes
// per world rank, plus 4 per rank of each communicator whose ranks were
// translated (counted as if every such communicator spanned the world).
void report_footprint(std::vector<footprint::Part>& out) {
  const Peers& p = peers();
  const int64_t n = static_cast<int64_t>(p.facts.size());
  const int64_t facts = static_cast<int64_t>(sizeof(PeerFacts));
  const int64_t flags = p.read_by ? 3 * static_cast<int64_t>(sizeof(std::atomic<bool>)) : 0;
  out.push_back({"peer facts", "world ranks", 0, n ? facts + flags : 0});
  const int64_t maps = g_rank_maps.load(), entries = g_rank_map_entries.load();
  const int64_t entry = static_cast<int64_t>(sizeof(int)), map = static_cast<int64_t>(sizeof(RankMap));
  out.push_back({"rank maps", "world ranks x communicators", maps * map + (entries - maps * n) * entry, maps * entry});
  std::lock_guard lock(g_no_ipc_mu);
  out.push_back({"peers without IPC", "failed peers", static_cast<int64_t>(g_no_ipc.capacity() * sizeof(int)), 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

}  // namespace

Status init_peers() {
  Peers& p = peers();
  if (p.ready) return ok_status();
  DTMPI_MPI_CHECK(REAL(MPI_Comm_dup)(MPI_COMM_WORLD, &p.comm));
  REAL(MPI_Comm_set_name)(p.comm, const_cast<char*>("dtmpi private"));
  REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &p.rank);
  int size = 0;
  REAL(MPI_Comm_size)(MPI_COMM_WORLD, &size);
  void* ub = nullptr;
  int flag = 0;
  REAL(MPI_Comm_get_attr)(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag) p.id_limit = (*static_cast<int*>(ub) - 1) / 2;
  MPI_Comm node = MPI_COMM_NULL;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split_type)(p.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  PeerFacts mine{p.rank, runtime::gpu_enabled() ? 1 : 0};
  REAL(MPI_Allreduce)(MPI_IN_PLACE, &mine.node, 1, MPI_INT32_T, MPI_MIN, node);
  REAL(MPI_Comm_free)(&node);
  p.facts.resize(static_cast<size_t>(size));
  footprint::set_world_ranks(size);
  p.read_by = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(size));
  p.read_gated_by = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(size));
  p.same_gpu = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(size));
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(&mine, 2, MPI_INT32_T, p.facts.data(), 2, MPI_INT32_T, p.comm));
  const std::string& ca = runtime::config().cuda_aware;
  p.cuda_aware = runtime::gpu_enabled() &&
                 (ca == "1" || ca == "on" || ca == "yes" ||
                  (ca == "auto" && runtime::mpi_cuda_aware() == runtime::CudaAware::kYes));
  p.descriptors = runtime::test_hooks().stage_host;
  for (const auto& f : p.facts) p.descriptors = p.descriptors || f.gpu;
  p.descriptors = p.descriptors && !p.cuda_aware;
  REAL(MPI_Comm_create_keyval)(MPI_COMM_NULL_COPY_FN, delete_rank_map, &p.keyval, nullptr);
  const auto gpus = runtime::query_gpus();
  load_model(p.rank, runtime::gpu_enabled() && !gpus.names.empty() ? gpus.names[0] : "");
  p.ready = true;
  return ok_status();
}

void finalize_peers() {
  Peers& p = peers();
  if (!p.ready) return;
  p.ready = false;
  REAL(MPI_Comm_free)(&p.comm);
  REAL(MPI_Comm_free_keyval)(&p.keyval);
}

bool peers_ready() { return peers().ready; }
MPI_Comm private_comm() { return peers().comm; }
int my_world_rank() { return peers().rank; }
bool descriptors_possible() { return peers().ready && peers().descriptors; }
bool mpi_takes_device_memory() { return peers().ready && peers().cuda_aware; }

int world_rank_of(MPI_Comm comm, int rank) {
  Peers& p = peers();
  if (!p.ready || rank < 0) return -1;
  if (comm == MPI_COMM_WORLD) return rank;
  void* value = nullptr;
  int flag = 0;
  REAL(MPI_Comm_get_attr)(comm, p.keyval, &value, &flag);
  // created once per communicator, one thread at a time (two threads creating
  // it would replace, and so delete, each other's); found without a lock after
  static std::mutex mu;
  std::unique_lock lock(mu, std::defer_lock);
  if (!flag) {
    lock.lock();
    REAL(MPI_Comm_get_attr)(comm, p.keyval, &value, &flag);
  }
  auto* map = static_cast<RankMap*>(value);
  if (!flag) {
    int inter = 0;
    REAL(MPI_Comm_test_inter)(comm, &inter);
    MPI_Group group, world;
    if (inter)
      REAL(MPI_Comm_remote_group)(comm, &group);
    else
      REAL(MPI_Comm_group)(comm, &group);
    REAL(MPI_Comm_group)(MPI_COMM_WORLD, &world);
    int n = 0;
    REAL(MPI_Group_size)(group, &n);
    map = new RankMap;
    std::vector<int> ranks(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
    map->world.resize(static_cast<size_t>(n));
    REAL(MPI_Group_translate_ranks)(group, n, ranks.data(), world, map->world.data());
    REAL(MPI_Group_free)(&group);
    REAL(MPI_Group_free)(&world);
    REAL(MPI_Comm_set_attr)(comm, p.keyval, map);
    g_rank_maps.fetch_add(1);
    g_rank_map_entries.fetch_add(n);
  }
  if (rank >= static_cast<int>(map->world.size())) return -1;
  const int w = map->world[static_cast<size_t>(rank)];
  return w == MPI_UNDEFINED ? -1 : w;
}

bool same_node(int w) {
  Peers& p = peers();
  return w >= 0 && static_cast<size_t>(w) < p.facts.size() &&
         p.facts[static_cast<size_t>(w)].node == p.facts[static_cast<size_t>(p.rank)].node;
}

bool peer_uses_gpu(int w) {
  Peers& p = peers();
  return w >= 0 && static_cast<size_t>(w) < p.facts.size() && p.facts[static_cast<size_t>(w)].gpu;
}

bool ipc_possible(int w) {
  if (!same_node(w) || !peer_uses_gpu(w) || !runtime::gpu_enabled()) return false;
  std::lock_guard lock(g_no_ipc_mu);
  return std::find(g_no_ipc.begin(), g_no_ipc.end(), w) == g_no_ipc.end();
}

void mark_no_ipc(int w) {
  std::lock_guard lock(g_no_ipc_mu);
  if (std::find(g_no_ipc.begin(), g_no_ipc.end(), w) == g_no_ipc.end()) g_no_ipc.push_back(w);
}

void mark_ipc_read_by(int w, bool gated, bool same_gpu) {
  Peers& p = peers();
  if (!p.read_by || w < 0 || static_cast<size_t>(w) >= p.facts.size()) return;
  p.read_by[static_cast<size_t>(w)].store(true, std::memory_order_relaxed);
  p.read_gated_by[static_cast<size_t>(w)].store(gated, std::memory_order_relaxed);
  p.same_gpu[static_cast<size_t>(w)].store(same_gpu, std::memory_order_relaxed);
}

bool shares_gpu_with(int w) {
  const Peers& p = peers();
  return p.same_gpu && w >= 0 && static_cast<size_t>(w) < p.facts.size() &&
         p.same_gpu[static_cast<size_t>(w)].load(std::memory_order_relaxed);
}

bool ipc_read_gated_by(int w) {
  const Peers& p = peers();
  return p.read_gated_by && w >= 0 && static_cast<size_t>(w) < p.facts.size() &&
         p.read_gated_by[static_cast<size_t>(w)].load(std::memory_order_relaxed);
}

bool ipc_read_by(int w) {
  const Peers& p = peers();
  return p.read_by && w >= 0 && static_cast<size_t>(w) < p.facts.size() &&
         p.read_by[static_cast<size_t>(w)].load(std::memory_order_relaxed);
}

int32_t next_transfer_id() {
  Peers& p = peers();
  return p.next_id.fetch_add(1, std::memory_order_relaxed) % p.id_limit;
}

}  // namespace dtmpi::transport
