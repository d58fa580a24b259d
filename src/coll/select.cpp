// DTMPI_COLL (validated by runtime/config.cpp) as a table per operation, and
// the built-in choice of "tuned".
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string>

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "coll/coll.hpp"
#include "coll/model.hpp"
#include "coll/tuning_table.hpp"
#include "runtime/config.hpp"

namespace dtmpi::coll {

namespace {

constexpr Algorithm kTunedMarker = static_cast<Algorithm>(-1);

struct Table {
  std::array<Algorithm, static_cast<size_t>(CollOpKind::kCount)> alg;
  bool any = false;
};

Table read_table() {
  Table t;
  t.alg.fill(Algorithm::kSystem);
  const std::string& v = runtime::config().coll;
  // "tuned" first (it fills the ops not named), then the named ones
  bool tuned = false;
  for (size_t at = 0; at <= v.size();) {
    const size_t end = std::min(v.find(',', at), v.size());
    if (v.substr(at, end - at) == "tuned") tuned = true;
    at = end + 1;
  }
  if (tuned) t.alg.fill(kTunedMarker);
  for (size_t at = 0; at <= v.size();) {
    const size_t end = std::min(v.find(',', at), v.size());
    const std::string item = v.substr(at, end - at);
    at = end + 1;
    const size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    // names as dtmpi-tune's table spells them (runtime/config.cpp validated them)
    const auto op = op_from_name(item.substr(0, colon));
    if (op) t.alg[static_cast<size_t>(*op)] = algorithm_from_name(item.substr(colon + 1)).value_or(Algorithm::kSystem);
  }
  for (Algorithm a : t.alg) t.any = t.any || a != Algorithm::kSystem;
  return t;
}

const Table& table() {
  static const Table t = read_table();
  return t;
}

}  // namespace

// The built-in choice, from dtmpi-bench coll on the 2-core VM (Open MPI
// 4.1.4, MPICH 4.0.2; 2 and 4 ranks: bench/results/coll-vm-2026-11-26.txt):
// dtmpi's algorithms only in the cells where they measured faster than the
// system MPI. Below ~512 B the system MPI's eager sends let a root return at
// once and win; with more ranks than cores every flag wait costs a context
// switch, so the smallest sizes stay the system MPI's there too. Without
// oversubscription recursive doubling and the binomial reduce won up to
// 512 KiB on both MPIs (the quiet 2-rank runs); Bcast from 2 KiB won 2-3x
// with Open MPI but lost 6-13% with MPICH 4.0.2 at 8-32 KiB.
Algorithm select_builtin(CollOpKind op, int n, int64_t bytes) {
  static const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const bool oversubscribed = n > cores;
  switch (op) {
    case CollOpKind::kBarrier:
      return oversubscribed ? Algorithm::kSystem : Algorithm::kDissemination;
    case CollOpKind::kBcast:
      return bytes >= 512 && bytes <= (64 << 10) ? Algorithm::kFlat : Algorithm::kSystem;
    case CollOpKind::kAllreduce:
      if (!oversubscribed) return bytes <= (512 << 10) ? Algorithm::kRecursiveDoubling : Algorithm::kSystem;
      return bytes >= 2048 && bytes <= (64 << 10) ? Algorithm::kReduceScatterAllgather : Algorithm::kSystem;
    case CollOpKind::kReduce:
      if (!oversubscribed) return bytes >= 512 && bytes <= (512 << 10) ? Algorithm::kBinomial : Algorithm::kSystem;
      return bytes >= 2048 && bytes <= (32 << 10) ? Algorithm::kFlat : Algorithm::kSystem;
    default:
      return Algorithm::kSystem;
  }
}

bool enabled() { return table().any; }
bool enabled(CollOpKind op) {
  return op < CollOpKind::kCount && table().alg[static_cast<size_t>(op)] != Algorithm::kSystem;
}

namespace {
// dtmpi-tune's table, set once by init_tuning (MPI_Init, before any
// collective): only where every rank of this node read the same bytes, since
// every rank of a communicator must choose the same algorithm.
const TuningTable* g_tuned = nullptr;
}  // namespace

Status init_tuning(MPI_Comm world) {
  bool tuned = false;
  for (Algorithm a : table().alg) tuned = tuned || a == kTunedMarker;
  if (!tuned) return ok_status();
  const std::string path = default_table_path();
  std::string text;
  if (std::ifstream f(path); f) {
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  auto t = std::make_unique<TuningTable>();
  std::string why = "no file";
  const bool ok = !text.empty() && from_json(text, *t, &why);
  // the same table on every rank of the node: the largest hash and the
  // largest complement agree only where all hashes are equal
  const unsigned long long h = ok ? std::hash<std::string>{}(text) | 1 : 0;
  unsigned long long mine[2] = {h, ~h}, all[2] = {0, 0};
  MPI_Comm node = MPI_COMM_NULL;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split_type)(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  const int rc = REAL(MPI_Allreduce)(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, node);
  REAL(MPI_Comm_free)(&node);
  DTMPI_MPI_CHECK(rc);
  int rank = 0;
  REAL(MPI_Comm_rank)(world, &rank);
  if (!ok || all[0] != ~all[1]) {
    if (rank == 0)
      DTMPI_LOG(kInfo, "DTMPI_COLL=tuned: %s (%s): the built-in choice",
                ok ? "the ranks of a node read different tables" : why.c_str(), path.c_str());
    return ok_status();
  }
  if (rank == 0)
    DTMPI_LOG(kInfo, "DTMPI_COLL=tuned: %zu entries from %s", t->entries.size(), path.c_str());
  g_tuned = t.release();  // kept for the process's life: a collective may read it at any time
  return ok_status();
}

bool in_place_keyed(CollOpKind op) {
  switch (op) {
    case CollOpKind::kAllreduce:
    case CollOpKind::kAllgather:
    case CollOpKind::kAllgatherv:
    case CollOpKind::kAlltoall:
    case CollOpKind::kReduceScatterBlock:
      return true;
    default:
      return false;
  }
}

Algorithm select(CollOpKind op, int n, int64_t bytes, bool nonblocking, bool in_place) {
  const Algorithm a = table().alg[static_cast<size_t>(op)];
  if (a != kTunedMarker) return a;
  if (g_tuned) {
    // the table's answer per communicator shape, operation, size class and
    // form, looked up once per thread (a lookup scans the table; a collective
    // call pays a hash probe)
    thread_local std::unordered_map<uint64_t, Algorithm> memo;
    const int cls = bytes_class(bytes);
    in_place = in_place && in_place_keyed(op);
    const uint64_t key = (static_cast<uint64_t>(n) << 17) | (static_cast<uint64_t>(cls) << 9) |
                         (static_cast<uint64_t>(op) << 2) | (in_place ? 2 : 0) | (nonblocking ? 1 : 0);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    TuningKey k;
    k.op = op;
    k.bytes = bytes;
    k.ranks = n;
    k.ranks_per_node = n;  // dtmpi's algorithms serve communicators of one node
    k.in_flight = nonblocking;
    k.in_place = in_place;
    const auto found = lookup(*g_tuned, k);
    // no entry for the operation: the built-in choice, which depends on the
    // exact size, so it is not kept
    if (!found) return select_builtin(op, n, bytes);
    memo.emplace(key, *found);
    return *found;
  }
  return select_builtin(op, n, bytes);
}

bool needs_agreement(CollOpKind op) {
  return op == CollOpKind::kGatherv || op == CollOpKind::kScatterv || op == CollOpKind::kAlltoallv;
}

bool serves_nonblocking(CollOpKind) { return true; }

namespace {

// The table's entry for `op` on `n` ranks, blocking, host memory, `bytes`.
const TuningEntry* tuned_entry(CollOpKind op, int n, int64_t bytes) {
  if (!g_tuned) return nullptr;
  TuningKey k;
  k.op = op;
  k.bytes = bytes;
  k.ranks = n;
  k.ranks_per_node = n;
  return closest(*g_tuned, k);
}

// With a table, an agreement is worth its cost where dtmpi's algorithm won
// every size class, or where the system MPI won only in classes that take at
// least this many agreements' time (then an agreement before the system MPI's
// call adds at most 1/kNegligible).
constexpr double kNegligible = 50;

}  // namespace

bool agrees_first(CollOpKind op, int n) {
  const Algorithm a = table().alg[static_cast<size_t>(op)];
  if (a != kTunedMarker) return a != Algorithm::kSystem;
  if (!g_tuned) return false;  // the built-in choice leaves them to the system MPI
  thread_local std::unordered_map<uint64_t, bool> memo;
  const uint64_t key = (static_cast<uint64_t>(n) << 8) | static_cast<uint64_t>(op);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  // the agreement: an 8-byte allreduce, as the table timed it on n ranks
  const TuningEntry* agreement = tuned_entry(CollOpKind::kAllreduce, n, 8);
  bool worth = agreement != nullptr;
  bool any = false;
  // every size class up to 2^40 bytes (the table's answer depends on the class only)
  for (int c = 0; c <= 40 && worth; ++c) {
    const TuningEntry* e = tuned_entry(op, n, int64_t{1} << c);
    if (!e) {
      worth = false;
    } else if (e->algorithm != Algorithm::kSystem) {
      any = true;
    } else {
      worth = e->system_us >= kNegligible * agreement->us;
    }
  }
  memo.emplace(key, worth && any);
  return worth && any;
}

bool agrees_first_nonblocking(CollOpKind op, int n) {
  const Algorithm a = table().alg[static_cast<size_t>(op)];
  if (a != kTunedMarker) return a != Algorithm::kSystem;
  if (!g_tuned) return false;
  thread_local std::unordered_map<uint64_t, bool> memo;
  const uint64_t key = (static_cast<uint64_t>(n) << 8) | static_cast<uint64_t>(op);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  // every size class's in-flight entry chose dtmpi's (the composite cannot
  // hand the call to the system MPI after the agreement)
  bool all = true;
  for (int c = 0; c <= 40 && all; ++c) {
    TuningKey k;
    k.op = op;
    k.bytes = int64_t{1} << c;
    k.ranks = n;
    k.ranks_per_node = n;
    k.in_flight = true;
    const TuningEntry* e = closest(*g_tuned, k);
    all = e != nullptr && e->key.in_flight && e->algorithm != Algorithm::kSystem;
  }
  memo.emplace(key, all);
  return all;
}

Algorithm nonblocking_after_agreement(CollOpKind op, int n, int64_t largest) {
  const Algorithm a = select(op, n, largest, true);
  const auto implements = algorithms_for(op);
  if (a != Algorithm::kSystem && std::find(implements.begin(), implements.end(), a) != implements.end()) return a;
  return implements.empty() ? Algorithm::kSystem : implements.front();
}

Algorithm choice(CollOpKind op, int n, int64_t bytes, bool nonblocking) {
  if (needs_agreement(op) && nonblocking)
    return agrees_first_nonblocking(op, n) ? nonblocking_after_agreement(op, n, bytes) : Algorithm::kSystem;
  if (needs_agreement(op) && !agrees_first(op, n)) return Algorithm::kSystem;
  return select(op, n, bytes, nonblocking);
}

}  // namespace dtmpi::coll
