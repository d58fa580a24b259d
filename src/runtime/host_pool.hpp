// Plain host buffers for staging when no GPU is in use (the host test mode of
// the transfer paths, collectives staged on the host), pooled in power-of-two
// size classes: a fresh multi-megabyte malloc is a fresh mmap whose pages all
// fault on first touch, which costs more than the copy itself (measured 10x
// on the halo benchmark in a VM).
#pragma once
#include <cstddef>

namespace dtmpi::runtime {

struct HostBuffer {
  void* ptr = nullptr;
  size_t capacity = 0;
  int cls = -1;
};
// Null when out of memory.
HostBuffer host_pool_acquire(size_t bytes);
void host_pool_release(HostBuffer b);

}  // namespace dtmpi::runtime
