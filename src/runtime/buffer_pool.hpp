// Pools of device and pinned host buffers in power-of-two size classes.
// Buffers are reused and never returned to CUDA on the hot path (cudaFree and
// cudaFreeHost synchronize the device); release_all() returns them.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace dtmpi::runtime {

struct PooledBuffer {
  void* ptr = nullptr;
  size_t capacity = 0;
  int cls = -1;  // size class: capacity == 1 << cls
};

class BufferPool {
 public:
  enum class Kind { kDevice, kPinnedHost };
  BufferPool(Kind kind, int device) : kind_(kind), device_(device) {}
  ~BufferPool() = default;  // buffers are returned by release_all(), not at exit

  Result<PooledBuffer> acquire(size_t bytes);
  void release(PooledBuffer b);
  void release_all();

  struct Counters {
    uint64_t cuda_allocs = 0;  // buffers obtained from CUDA
    uint64_t reuses = 0;       // acquisitions served from the pool
    uint64_t bytes_held = 0;   // capacity owned by the pool (free or lent)
  };
  Counters counters() const;
  std::string describe() const;

 private:
  static constexpr int kMinClass = 8;   // 256 B
  static constexpr int kMaxClass = 40;  // 1 TiB
  Kind kind_;
  int device_;
  mutable std::mutex mu_;
  std::vector<void*> free_[kMaxClass + 1];
  Counters counters_;
};

// Returns a pooled buffer on scope exit.
class PoolLease {
 public:
  PoolLease(BufferPool& pool, PooledBuffer b) : pool_(&pool), b_(b) {}
  PoolLease(const PoolLease&) = delete;
  PoolLease& operator=(const PoolLease&) = delete;
  ~PoolLease() { pool_->release(b_); }
  void* get() const { return b_.ptr; }

 private:
  BufferPool* pool_;
  PooledBuffer b_;
};

}  // namespace dtmpi::runtime
