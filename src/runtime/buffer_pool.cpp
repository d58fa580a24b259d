#include "runtime/buffer_pool.hpp"

#include "runtime/config.hpp"

#include <cuda_runtime.h>

#include <cstdio>

#include "base/cuda_check.hpp"

namespace dtmpi::runtime {

Result<PooledBuffer> BufferPool::acquire(size_t bytes) {
  int cls = kMinClass;
  while ((size_t{1} << cls) < bytes) ++cls;
  if (cls > kMaxClass) return Error{kErrTooLarge, "buffer larger than the pool's largest class"};
  {
    std::lock_guard lock(mu_);
    if (!free_[cls].empty()) {
      void* p = free_[cls].back();
      free_[cls].pop_back();
      ++counters_.reuses;
      return PooledBuffer{p, size_t{1} << cls, cls};
    }
  }
  void* p = nullptr;
  const size_t cap = size_t{1} << cls;
  if (kind_ == Kind::kDevice) {
    int prev = 0;
    DTMPI_CUDA_CHECK(cudaGetDevice(&prev));
    if (prev != device_) DTMPI_CUDA_CHECK(cudaSetDevice(device_));
    cudaError_t rc = test_hooks().managed_pool ? cudaMallocManaged(&p, cap) : cudaMalloc(&p, cap);
    if (prev != device_) cudaSetDevice(prev);
    DTMPI_CUDA_CHECK(rc);
  } else {
    // portable + mapped: usable by kernels on every device (one-shot path)
    DTMPI_CUDA_CHECK(cudaHostAlloc(&p, cap, cudaHostAllocPortable | cudaHostAllocMapped));
  }
  std::lock_guard lock(mu_);
  ++counters_.cuda_allocs;
  counters_.bytes_held += cap;
  return PooledBuffer{p, cap, cls};
}

void BufferPool::release(PooledBuffer b) {
  if (!b.ptr) return;
  std::lock_guard lock(mu_);
  free_[b.cls].push_back(b.ptr);
}

void BufferPool::release_all() {
  std::lock_guard lock(mu_);
  for (int c = 0; c <= kMaxClass; ++c) {
    for (void* p : free_[c]) {
      if (kind_ == Kind::kDevice)
        cudaFree(p);
      else
        cudaFreeHost(p);
      counters_.bytes_held -= size_t{1} << c;
    }
    free_[c].clear();
  }
}

BufferPool::Counters BufferPool::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::string BufferPool::describe() const {
  const Counters c = counters();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s%s: %llu from CUDA, %llu reused, %.1f MiB held",
                kind_ == Kind::kDevice ? "device " : "pinned host",
                kind_ == Kind::kDevice ? std::to_string(device_).c_str() : "",
                static_cast<unsigned long long>(c.cuda_allocs), static_cast<unsigned long long>(c.reuses),
                static_cast<double>(c.bytes_held) / 1048576.0);
  return buf;
}

}  // namespace dtmpi::runtime
