// How a device domain's GPUs reach each other (a rank on several GPUs,
// set_gpus()): kernels over peer access where every pair of them has it,
// else copies between them (peer_copies, domain_impl.hpp) -- the peers'
// buffers through mirrors on each GPU, the same-rank copies that cross GPUs
// through links (packed, cudaMemcpyPeerAsync, unpacked).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "stencil/device_internal.hpp"

namespace dtmpi::stencil {

// peer_copies: the mirrors' ranges of the peers' buffers moved to the home
// GPU's buffers after the packs (send), or from them before the unpacks
// (receive), each on its GPU's stream (behind its packs, ahead of its unpacks).
Status move_mirrors(DomainImpl& d, OnDevice& on, bool send) {
  const int home = d.devices.front();
  for (const MirrorRange& m : d.mirror_ranges) {
    if (m.send != send) continue;
    const Peer& p = d.peers[m.peer];
    const int g = d.devices[m.gpu];
    char* home_bytes = static_cast<char*>(send ? p.send_device : p.recv_device) + m.offset;
    char* mirror_bytes = static_cast<char*>(send ? p.send_mirror[m.gpu] : p.recv_mirror[m.gpu]) + m.offset;
    DTMPI_TRY(on.use(g));
    const auto stream = static_cast<cudaStream_t>(d.streams[m.gpu]);
    const size_t n = static_cast<size_t>(m.bytes);
    if (send) DTMPI_CUDA_CHECK(cudaMemcpyPeerAsync(home_bytes, home, mirror_bytes, g, n, stream));
    else DTMPI_CUDA_CHECK(cudaMemcpyPeerAsync(mirror_bytes, g, home_bytes, home, n, stream));
  }
  return ok_status();
}


// Whether every pair of the rank's GPUs can reach each other's memory.
Result<bool> all_peer_access(const std::vector<int>& devices) {
  for (int a : devices)
    for (int b : devices) {
      if (a == b) continue;
      int can = 0;
      DTMPI_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) return false;
    }
  return true;
}

// peer_copies: the mirrors of every peer's buffers on the rank's other GPUs,
// the ranges they move, and the links between GPUs for the same-rank copies
// that cross them (with their buffers and events).
Status prepare_peer_copies(DomainImpl& d, OnDevice& on) {
  for (size_t i = 0; i < d.peers.size(); ++i) {
    Peer& p = d.peers[i];
    p.send_mirror.assign(d.devices.size(), nullptr);
    p.recv_mirror.assign(d.devices.size(), nullptr);
    for (const bool send : {true, false}) {
      int64_t at = 0;
      for (const Region& r : send ? p.send : p.recv) {
        const size_t g = device_index(d, d.subs[static_cast<size_t>(r.sub)].device());
        const int64_t n = d.region_bytes(r);
        if (g != 0 && n > 0) {
          MirrorRange* last = d.mirror_ranges.empty() ? nullptr : &d.mirror_ranges.back();
          if (last && last->peer == i && last->gpu == g && last->send == send && last->offset + last->bytes == at)
            last->bytes += n;  // consecutive regions of one GPU: one copy
          else
            d.mirror_ranges.push_back({i, g, at, n, send});
          auto& mirror = send ? p.send_mirror : p.recv_mirror;
          if (!mirror[g]) {
            DTMPI_TRY(on.use(d.devices[g]));
            DTMPI_CUDA_CHECK(
                cudaMalloc(&mirror[g], static_cast<size_t>(std::max<int64_t>(send ? p.send_bytes : p.recv_bytes, 1))));
          }
        }
        at += n;
      }
    }
  }
  for (const LocalCopy& c : d.copies) {
    if (direct_copy(d, c)) continue;
    const size_t from = device_index(d, d.subs[static_cast<size_t>(c.from.sub)].device());
    const size_t to = device_index(d, d.subs[static_cast<size_t>(c.to.sub)].device());
    auto l = std::find_if(d.links.begin(), d.links.end(), [&](const GpuLink& k) { return k.from == from && k.to == to; });
    if (l == d.links.end()) {
      d.links.push_back({});
      l = d.links.end() - 1;
      l->from = from;
      l->to = to;
    }
    l->copies.push_back(c);
    l->bytes += d.region_bytes(c.from);
  }
  for (GpuLink& l : d.links) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(l.bytes, 1));
    DTMPI_TRY(on.use(d.devices[l.from]));
    DTMPI_CUDA_CHECK(cudaMalloc(&l.out, n));
    cudaEvent_t moved = nullptr;
    DTMPI_CUDA_CHECK(cudaEventCreateWithFlags(&moved, cudaEventDisableTiming));
    l.moved = moved;
    DTMPI_TRY(on.use(d.devices[l.to]));
    DTMPI_CUDA_CHECK(cudaMalloc(&l.in, n));
  }
  return ok_status();
}

// Lets every pair of the rank's GPUs reach each other's memory (the copies
// between subdomains, the packs into and unpacks out of the home GPU's buffers).
Status enable_peer_access(const std::vector<int>& devices) {
  // the pairs enabled so far by this process's domains: a second domain on
  // the same GPUs does not ask again (the driver's "already enabled" answer
  // is an error that tools like compute-sanitizer report). A program that
  // resets a device (cudaDeviceReset) between domains loses the access: not
  // supported (documented in docs/stencil.md)
  static std::mutex mu;
  static std::set<std::pair<int, int>> enabled;
  std::lock_guard lock(mu);
  OnDevice on;
  for (int a : devices)
    for (int b : devices) {
      if (a == b || enabled.count({a, b})) continue;
      int can = 0;
      DTMPI_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can)
        return Error{MPI_ERR_ARG, "dtmpi::stencil: set_gpus(): GPU " + std::to_string(a) + " cannot access GPU " +
                                      std::to_string(b) + "'s memory (no peer access between them); one rank's "
                                      "subdomains can only be on GPUs that reach each other"};
      DTMPI_TRY(on.use(a));
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
      } else {
        DTMPI_CUDA_CHECK(e);
      }
      enabled.insert({a, b});
    }
  return ok_status();
}

}  // namespace dtmpi::stencil
