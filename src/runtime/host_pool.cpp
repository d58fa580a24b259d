#include "runtime/host_pool.hpp"

#include <cstdlib>
#include <mutex>
#include <vector>

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
      return b;
    }
  }
  b.ptr = std::malloc(b.capacity);
  return b;
}

void host_pool_release(HostBuffer b) {
  if (!b.ptr) return;
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
