#include "runtime/host_pool.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/footprint.hpp"

namespace dtmpi::runtime {
namespace {

constexpr int kMinClass = 8;        // 256 B
constexpr int kMaxClass = 40;
// Free buffers kept: enough for a halo exchange's 26 pieces each way in one
// size class; beyond the bounds they go back to malloc.
constexpr size_t kKeepPerClass = 64;
constexpr size_t kKeepBytes = size_t{1} << 30;

struct Pool {
  std::mutex mu;
  std::vector<void*> free[kMaxClass + 1];
  size_t kept_bytes = 0;
};

Pool& pool() {
  static auto* p = new Pool;  // never destroyed: buffers may be released during exit
  return *p;
}

// Lent buffers belong to operations in flight; kept ones are bounded above.
std::atomic<int64_t> g_lent_bytes{0};

void report_footprint(std::vector<footprint::Part>& out) {
  auto& p = pool();
  std::lock_guard lock(p.mu);
  out.push_back({"host staging (free, kept)", "use", static_cast<int64_t>(p.kept_bytes), 0});
  out.push_back({"host staging (lent)", "use", g_lent_bytes.load(), 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

int class_of(size_t bytes) {
  int c = kMinClass;
  while (c < kMaxClass && (size_t{1} << c) < bytes) ++c;
  return c;
}

}  // namespace

HostBuffer host_pool_acquire(size_t bytes) {
  const int c = class_of(bytes ? bytes : 1);
  HostBuffer b{nullptr, size_t{1} << c, c};
  {
    auto& p = pool();
    std::lock_guard lock(p.mu);
    if (!p.free[c].empty()) {
      b.ptr = p.free[c].back();
      p.free[c].pop_back();
      p.kept_bytes -= b.capacity;
      g_lent_bytes.fetch_add(static_cast<int64_t>(b.capacity), std::memory_order_relaxed);
      return b;
    }
  }
  b.ptr = std::malloc(b.capacity);
  if (b.ptr) g_lent_bytes.fetch_add(static_cast<int64_t>(b.capacity), std::memory_order_relaxed);
  return b;
}

void host_pool_release(HostBuffer b) {
  if (!b.ptr) return;
  g_lent_bytes.fetch_sub(static_cast<int64_t>(b.capacity), std::memory_order_relaxed);
  auto& p = pool();
  {
    std::lock_guard lock(p.mu);
    if (b.cls >= kMinClass && b.cls <= kMaxClass && p.free[b.cls].size() < kKeepPerClass &&
        p.kept_bytes + b.capacity <= kKeepBytes) {
      p.free[b.cls].push_back(b.ptr);
      p.kept_bytes += b.capacity;
      return;
    }
  }
  std::free(b.ptr);
}

}  // namespace dtmpi::runtime
