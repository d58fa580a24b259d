// Internals shared by the device-memory files of dtmpi::stencil: device.cpp
// (storage, launches, the exchange's moves) and device_links.cpp (how a
// rank's GPUs reach each other: peer access, or copies between them).
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/result.hpp"
#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {

// The index of `device` in d.devices (the rank's GPUs, home first): its
// stream in d.streams, its launch, its mirror.
inline size_t device_index(const DomainImpl& d, int device) {
  return static_cast<size_t>(std::find(d.devices.begin(), d.devices.end(), device) - d.devices.begin());
}

// Makes `device` current for the launches that follow (a stream's kernels
// must be launched with its device current) and restores the caller's
// device when it goes.
class OnDevice {
 public:
  OnDevice() {
    cudaGetDevice(&saved_);
    current_ = saved_;
  }
  ~OnDevice() {
    if (current_ != saved_) cudaSetDevice(saved_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  Status use(int device) {
    if (device != current_) DTMPI_CUDA_CHECK(cudaSetDevice(device));
    current_ = device;
    return ok_status();
  }

 private:
  int saved_ = 0;
  int current_ = 0;
};

// Whether a same-rank copy runs as one kernel (same GPU, or peer access).
inline bool direct_copy(const DomainImpl& d, const LocalCopy& c) {
  return !d.peer_copies ||
         d.subs[static_cast<size_t>(c.from.sub)].device() == d.subs[static_cast<size_t>(c.to.sub)].device();
}

// device_links.cpp
// Whether every pair of the rank's GPUs can reach each other's memory.
Result<bool> all_peer_access(const std::vector<int>& devices);
// Enables it for every pair (once per process and pair).
Status enable_peer_access(const std::vector<int>& devices);
// peer_copies: the mirrors, their ranges and the links between GPUs
// (buffers, events), after the peers' home buffers exist.
Status prepare_peer_copies(DomainImpl& d, OnDevice& on);
// peer_copies: the mirrors' ranges moved to the home buffers (send, after the
// packs) or from them (receive, before the unpacks), on their GPUs' streams.
Status move_mirrors(DomainImpl& d, OnDevice& on, bool send);

}  // namespace dtmpi::stencil
