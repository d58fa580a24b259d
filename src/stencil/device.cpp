// Device-memory domains: every subdomain of the rank on the GPU current at
// realize(), each quantity a pitched allocation (rows of 512 bytes, as
// Astaroth's); directions between this rank's subdomains by one kernel each,
// without a buffer; messages to other ranks packed by one kernel per
// direction into one device buffer per peer, then either
//  - the device path (dtmpi in front): that buffer handed to dtmpi's
//    MPI_Isend, which moves it GPU to GPU (CUDA IPC within a node); or
//  - the staged path (any other MPI): copied once into pinned host memory and
//    sent by the system MPI from there (the thesis's staged method), so an
//    MPI that may not be CUDA-aware never sees a device pointer.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <algorithm>
#include <string>

#include "base/cuda_check.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "stencil/device_kernels.hpp"
#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {
namespace {

constexpr int64_t kDeviceRowAlign = 512;

cudaStream_t stream_of(const DomainImpl& d) { return static_cast<cudaStream_t>(d.stream); }

int word_for(int64_t esize, int64_t offset) {
  for (int w : {8, 4, 2})
    if (esize % w == 0 && offset % w == 0) return w;
  return 1;
}

char* point(const Subdomain& s, int q, int64_t esize, const Dim3& p) {
  const Box a = s.allocated();
  return static_cast<char*>(s.current_data(q)) + ((p.z - a.lo.z) * a.size().y + (p.y - a.lo.y)) * s.pitch(q) +
         (p.x - a.lo.x) * esize;
}

// Launches the move of region `r` (into `to` for a copy), every quantity's
// box, up to kMaxQuantities quantities a launch; `packed`: where the
// region's bytes start in the packed buffer (pack/unpack), quantity after
// quantity as on the host.
Status move(DomainImpl& d, device::Move how, const Region& r, char* packed, const Region* to) {
  const Subdomain& s = d.subs[static_cast<size_t>(r.sub)];
  int64_t offset = 0;  // of quantity q's bytes in the packed region
  for (size_t first = 0; first < d.quantities.size(); first += device::kMaxQuantities) {
    device::RegionArgs a;
    for (size_t q = first; q < d.quantities.size() && a.quantities < device::kMaxQuantities; ++q, ++a.quantities) {
      const int qi = static_cast<int>(q), k = a.quantities;
      const Box& b = r.boxes[q];
      const Dim3 n = b.empty() ? Dim3{0, 0, 0} : b.size();
      a.nx[k] = n.x;
      a.ny[k] = n.y;
      a.nz[k] = n.z;
      a.first[k + 1] = a.first[k] + n.volume();
      if (b.empty()) continue;  // no thread is this quantity's
      const int64_t esize = static_cast<int64_t>(d.quantities[q].size);
      a.mem[k] = point(s, qi, esize, b.lo);
      a.pitch[k] = s.pitch(qi);
      a.slice[k] = s.pitch(qi) * s.allocated().size().y;
      a.esize[k] = esize;
      if (how == device::Move::kCopy) {
        const Subdomain& t = d.subs[static_cast<size_t>(to->sub)];
        a.other[k] = point(t, qi, esize, to->boxes[q].lo);
        a.other_pitch[k] = t.pitch(qi);
        a.other_slice[k] = t.pitch(qi) * t.allocated().size().y;
        a.word[k] = word_for(esize, 0);
      } else {
        a.other[k] = packed + offset;
        a.word[k] = word_for(esize, static_cast<int64_t>(reinterpret_cast<uintptr_t>(packed + offset)));
      }
      offset += n.volume() * esize;
    }
    DTMPI_CUDA_CHECK(static_cast<cudaError_t>(device::launch(how, a, d.stream)));
  }
  return ok_status();
}

enum GraphKind { kPackGraph = 0, kCopyGraph = 1, kUnpackGraph = 2 };

// Runs `record` (launches on the exchange's stream) directly, or -- with
// graphs on -- replays its recording for the current swap() parity,
// recording it first. The launches of a kind are the same every exchange of
// a parity (same kernels, same arguments, same buffers), which is what makes
// one recording valid for all of them (thesis section 4.5.6).
template <class Record>
Status replay(DomainImpl& d, GraphKind kind, Record record) {
  if (!d.graphs) return record();
  void*& slot = d.graph_exec[static_cast<size_t>(d.parity * 3 + kind)];
  if (!slot) {
    DTMPI_CUDA_CHECK(cudaStreamBeginCapture(stream_of(d), cudaStreamCaptureModeThreadLocal));
    const Status recorded = record();
    cudaGraph_t graph = nullptr;
    // the capture is ended whatever happened, so the stream is usable again
    const cudaError_t ended = cudaStreamEndCapture(stream_of(d), &graph);
    if (!recorded) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      return recorded;
    }
    DTMPI_CUDA_CHECK(ended);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    cudaGraphDestroy(graph);
    DTMPI_CUDA_CHECK(made);
    slot = exec;
  }
  DTMPI_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(slot), stream_of(d)));
  return ok_status();
}

Status record_pack(DomainImpl& d) {
  for (Peer& p : d.peers) {
    char* out = static_cast<char*>(p.send_device);
    for (const Region& r : p.send) {
      DTMPI_TRY(move(d, device::Move::kPack, r, out, nullptr));
      out += d.region_bytes(r);
    }
    if (!d.device_messages && p.send_bytes > 0)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(p.send_host, p.send_device, static_cast<size_t>(p.send_bytes),
                                       cudaMemcpyDeviceToHost, stream_of(d)));
  }
  return ok_status();
}

Status record_copy_local(DomainImpl& d) {
  for (const LocalCopy& c : d.copies) DTMPI_TRY(move(d, device::Move::kCopy, c.from, nullptr, &c.to));
  return ok_status();
}

Status record_unpack(DomainImpl& d) {
  for (Peer& p : d.peers) {
    // device path: dtmpi's MPI_Waitall returned with the bytes in place
    // (docs/point-to-point.md: a receive completes once the data is there)
    if (!d.device_messages && p.recv_bytes > 0)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(p.recv_device, p.recv_host, static_cast<size_t>(p.recv_bytes),
                                       cudaMemcpyHostToDevice, stream_of(d)));
    char* in = static_cast<char*>(p.recv_device);
    for (const Region& r : p.recv) {
      DTMPI_TRY(move(d, device::Move::kUnpack, r, in, nullptr));
      in += d.region_bytes(r);
    }
  }
  return ok_status();
}

}  // namespace

int current_device() noexcept {
  int device = -1;
  // a rank without a GPU answers -1 instead of failing: realize() reports
  // that later, on every rank, from device_allocate()
  if (!runtime::gpu_enabled() || !DTMPI_CUDA_PROBE(cudaGetDevice(&device))) return -1;
  return device;
}

Status device_allocate(DomainImpl& d) {
  int device = 0;
  // before anything is allocated: a forced device path without dtmpi in
  // front fails here, and realize() reports it on every rank
  const bool front = dtmpi_in_front();
  if (d.peer_path == PeerPath::kDevice && !front)
    return Error{MPI_ERR_ARG, "dtmpi::stencil: PeerPath::kDevice needs dtmpi as the MPI in front (libdtmpi preloaded "
                              "or linked before -lmpi, its MPI_Init run, DTMPI_DISABLE unset): the system MPI may not "
                              "take device buffers"};
  d.device_messages = d.peer_path == PeerPath::kDevice || (d.peer_path == PeerPath::kAuto && front);
  d.graphs = d.graphs_set ? *d.graphs_set : runtime::config().stencil_graphs;
  d.parity = 0;
  if (!runtime::gpu_enabled())
    return Error{MPI_ERR_ARG, "dtmpi::stencil: Memory::kDevice but this process has no usable GPU (no driver, no "
                              "device, or DTMPI_CUDA=off)"};
  DTMPI_CUDA_CHECK(cudaGetDevice(&device));
  cudaStream_t stream = nullptr;
  DTMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  d.stream = stream;
  for (Subdomain& s : d.subs) {
    Access::device(s) = device;
    const Dim3 a = s.allocated().size();
    for (const QuantityInfo& q : d.quantities) {
      const int64_t pitch = (a.x * static_cast<int64_t>(q.size) + kDeviceRowAlign - 1) / kDeviceRowAlign * kDeviceRowAlign;
      const size_t bytes = static_cast<size_t>(pitch * a.y * a.z);
      for (auto* list : {&Access::current(s), &Access::next(s)}) {
        void* p = nullptr;
        DTMPI_CUDA_CHECK(cudaMalloc(&p, bytes));
        list->push_back(p);
        DTMPI_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
      }
      Access::pitch(s).push_back(pitch);
    }
  }
  for (Peer& p : d.peers) {
    const size_t sb = static_cast<size_t>(std::max<int64_t>(p.send_bytes, 1));
    const size_t rb = static_cast<size_t>(std::max<int64_t>(p.recv_bytes, 1));
    DTMPI_CUDA_CHECK(cudaMalloc(&p.send_device, sb));
    DTMPI_CUDA_CHECK(cudaMalloc(&p.recv_device, rb));
    if (d.device_messages) continue;  // MPI takes the device buffers themselves
    DTMPI_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p.send_host), sb));
    DTMPI_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p.recv_host), rb));
  }
  DTMPI_CUDA_CHECK(cudaStreamSynchronize(stream));
  return ok_status();
}

void device_release(DomainImpl& d) noexcept {
  if (d.stream) cudaStreamSynchronize(stream_of(d));
  for (Subdomain& s : d.subs) {
    for (void* p : Access::current(s)) cudaFree(p);
    for (void* p : Access::next(s)) cudaFree(p);
    Access::current(s).clear();
    Access::next(s).clear();
  }
  for (Peer& p : d.peers) {
    cudaFree(p.send_device);
    cudaFree(p.recv_device);
    cudaFreeHost(p.send_host);
    cudaFreeHost(p.recv_host);
    p.send_device = p.recv_device = nullptr;
    p.send_host = p.recv_host = nullptr;
  }
  for (void*& g : d.graph_exec) {
    if (g) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
    g = nullptr;
  }
  if (d.stream) cudaStreamDestroy(stream_of(d));
  d.stream = nullptr;
  cudaGetLastError();  // nothing to report from a release
}

Status device_pack(DomainImpl& d) {
  if (!d.peers.empty()) DTMPI_TRY(replay(d, kPackGraph, [&] { return record_pack(d); }));
  // The bytes must be in place before MPI_Isend reads them: in host memory
  // (staged), or in the device buffer (device path) -- dtmpi orders its GPU
  // work after the legacy default stream only (DTMPI_GPU_ORDER=legacy), and
  // not at all with DTMPI_GPU_ORDER=stream, never after this non-blocking
  // stream, so the packs are waited for here under either setting.
  DTMPI_CUDA_CHECK(cudaStreamSynchronize(stream_of(d)));
  return ok_status();
}

Status device_copy_local(DomainImpl& d) {
  // queued behind the packs; finish_exchange() waits for the stream
  if (d.copies.empty()) return ok_status();
  return replay(d, kCopyGraph, [&] { return record_copy_local(d); });
}

Status device_unpack(DomainImpl& d) {
  if (!d.peers.empty()) DTMPI_TRY(replay(d, kUnpackGraph, [&] { return record_unpack(d); }));
  DTMPI_CUDA_CHECK(cudaStreamSynchronize(stream_of(d)));
  return ok_status();
}

}  // namespace dtmpi::stencil
