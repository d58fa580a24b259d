// Device-memory domains: every subdomain of the rank on its GPU (the current
// one, or set_gpus()'s by slot), each quantity a pitched allocation (rows of
// 512 bytes, as Astaroth's); directions between this rank's subdomains
// copied without a buffer (between two GPUs of the rank: on the source's
// GPU, writing the other's memory over peer access); messages to other ranks
// packed into one device buffer per peer on the rank's home GPU (its first),
// then either
//  - the device path (dtmpi in front): that buffer handed to dtmpi's
//    MPI_Isend, which moves it GPU to GPU (CUDA IPC within a node); or
//  - the staged path (any other MPI): copied once into pinned host memory and
//    sent by the system MPI from there (the thesis's staged method), so an
//    MPI that may not be CUDA-aware never sees a device pointer.
// Each kind of move (packs, copies, unpacks) is one kernel launch per GPU
// over all its regions and quantities (piece.hpp). A rank on GPUs without
// peer access between them (or DTMPI_STENCIL_PEER_ACCESS=0) moves the bytes
// between its GPUs by copies instead (peer_copies, domain_impl.hpp).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <utility>

#include "base/cuda_check.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "stencil/device_kernels.hpp"
#include "stencil/device_internal.hpp"
#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {
namespace {

constexpr int64_t kDeviceRowAlign = 512;

// The exchange's stream on the rank's home GPU (the peers' buffers), and on
// the GPU of subdomain `sub`.
cudaStream_t home_stream(const DomainImpl& d) { return static_cast<cudaStream_t>(d.streams.front()); }

Status sync_all(const DomainImpl& d) {
  for (void* s : d.streams) DTMPI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  return ok_status();
}

// Point p of quantity q in the buffer a swap() parity makes current():
// current() at realize() for parity 0, next() for parity 1.
char* point(const Subdomain& s, int q, int64_t esize, const Dim3& p, int parity) {
  const Box a = s.allocated();
  return static_cast<char*>(parity == 0 ? s.current_data(q) : s.next_data(q)) + ((p.z - a.lo.z) * a.size().y + (p.y - a.lo.y)) * s.pitch(q) +
         (p.x - a.lo.x) * esize;
}

// The pieces (piece.hpp) of region `r`, every quantity, into `out` by the
// GPU that moves them: the subdomain's own (it reads its memory for a pack
// or copy, writes it for an unpack; the other side is reached over peer
// access where that is another GPU). `packed`: where the region's bytes
// start in the packed buffer (pack/unpack), quantity after quantity as on
// the host; `to`: the destination region of a copy.
void add_pieces(const DomainImpl& d, int parity, const Region& r, char* packed, const Region* to,
                std::vector<std::vector<device::Piece>>& out) {
  const Subdomain& s = d.subs[static_cast<size_t>(r.sub)];
  std::vector<device::Piece>& gpu = out[device_index(d, s.device())];
  int64_t offset = 0;  // of quantity q's bytes in the packed region
  for (size_t q = 0; q < d.quantities.size(); ++q) {
    const Box& b = r.boxes[q];
    if (b.empty()) continue;  // q's stencil does not reach this direction: no bytes
    const int qi = static_cast<int>(q);
    const int64_t esize = static_cast<int64_t>(d.quantities[q].size);
    const Dim3 n = b.size();
    const device::PieceShape shape{n.x, n.y, n.z, esize};
    const int64_t slice = s.pitch(qi) * s.allocated().size().y;
    if (to) {
      const Subdomain& t = d.subs[static_cast<size_t>(to->sub)];
      gpu.push_back(device::make_piece(shape, point(s, qi, esize, b.lo, parity), s.pitch(qi), slice,
                                       point(t, qi, esize, to->boxes[q].lo, parity), t.pitch(qi),
                                       t.pitch(qi) * t.allocated().size().y));
    } else {
      gpu.push_back(
          device::make_piece(shape, point(s, qi, esize, b.lo, parity), s.pitch(qi), slice, packed + offset, 0, 0));
    }
    offset += n.volume() * esize;
  }
}

// The kinds of move of an exchange: the index (with the parity) of their
// launches and, the first three, of their graphs (the links' only exist on
// several GPUs, where graphs are off).
enum MoveKind { kPacks = 0, kCopies = 1, kUnpacks = 2, kLinkPacks = 3, kLinkUnpacks = 4, kMoveKinds = 5 };
size_t launch_index(int parity, MoveKind kind) { return static_cast<size_t>(parity * kMoveKinds + kind); }
static_assert(std::tuple_size_v<decltype(DomainImpl::launches)> == 2 * kMoveKinds);

// Where region bytes at `at` in a peer's home buffer `home` are packed or
// unpacked by GPU index `g`: there, or (peer_copies, not the home GPU) at the
// same offset of that GPU's mirror.
char* packed_at(const DomainImpl& d, char* home, char* at, const std::vector<void*>& mirror, size_t g) {
  if (!d.peer_copies || g == 0) return at;
  return static_cast<char*>(mirror[g]) + (at - home);
}

// The launches of `kind` for swap() parity `parity` (one per GPU that has
// pieces), their tables copied to each GPU -- the pieces' pointers are those
// of the parity's current() buffers, the same every exchange of a parity, as
// for the graphs below. Made at realize() for both parities
// (build_all_launches): a failure there is reported on every rank, where one
// in an exchange would leave the peers waiting for this rank's messages.
Status build_launches(DomainImpl& d, MoveKind kind, int parity) {
  auto& slot = d.launches[launch_index(parity, kind)];
  std::vector<std::vector<device::Piece>> pieces(d.devices.size());
  if (kind == kCopies) {
    for (const LocalCopy& c : d.copies)
      if (direct_copy(d, c)) add_pieces(d, parity, c.from, nullptr, &c.to, pieces);
  } else if (kind == kLinkPacks || kind == kLinkUnpacks) {
    for (const GpuLink& l : d.links) {
      char* at = static_cast<char*>(kind == kLinkPacks ? l.out : l.in);
      for (const LocalCopy& c : l.copies) {
        add_pieces(d, parity, kind == kLinkPacks ? c.from : c.to, at, nullptr, pieces);
        at += d.region_bytes(c.from);
      }
    }
  } else {
    for (Peer& p : d.peers) {
      char* home = static_cast<char*>(kind == kPacks ? p.send_device : p.recv_device);
      char* at = home;
      for (const Region& r : kind == kPacks ? p.send : p.recv) {
        const size_t g = device_index(d, d.subs[static_cast<size_t>(r.sub)].device());
        add_pieces(d, parity, r, packed_at(d, home, at, kind == kPacks ? p.send_mirror : p.recv_mirror, g), nullptr,
                   pieces);
        at += d.region_bytes(r);
      }
    }
  }
  std::vector<device::BlockTable> tables;
  for (std::vector<device::Piece>& gpu : pieces) {
    std::erase_if(gpu, [](const device::Piece& p) { return p.words == 0; });
    tables.push_back(device::block_table(gpu));
    if (tables.back().blocks() == 0 && !gpu.empty())
      return Error{MPI_ERR_NO_MEM, "dtmpi::stencil: a region of 2^32 tiles or more (4 TiB) cannot be moved"};
  }
  // the tables copied so far, freed again if a later GPU's copy fails
  std::vector<GpuLaunch> launches;
  struct FreeOnError {
    std::vector<GpuLaunch>& made;
    bool keep = false;
    ~FreeOnError() {
      if (!keep)
        for (GpuLaunch& l : made) cudaFree(l.table);
    }
  } guard{launches};
  OnDevice on;
  for (size_t g = 0; g < pieces.size(); ++g) {
    const device::BlockTable& table = tables[g];
    if (table.blocks() == 0) continue;
    DTMPI_TRY(on.use(d.devices[g]));
    const auto stream = static_cast<cudaStream_t>(d.streams[g]);
    // one allocation: the pieces, then each block's piece and tile
    const size_t piece_bytes = pieces[g].size() * sizeof(device::Piece);
    const size_t block_bytes = table.order.size() * sizeof(device::BlockRef);
    GpuLaunch l;
    l.device = d.devices[g];
    DTMPI_CUDA_CHECK(cudaMalloc(&l.table, piece_bytes + block_bytes));
    launches.push_back(l);
    char* base = static_cast<char*>(l.table);
    // on the stream that will launch them: ordered before the kernel (pageable
    // sources are staged before the call returns)
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(base, pieces[g].data(), piece_bytes, cudaMemcpyHostToDevice, stream));
    DTMPI_CUDA_CHECK(
        cudaMemcpyAsync(base + piece_bytes, table.order.data(), block_bytes, cudaMemcpyHostToDevice, stream));
    launches.back().batch = {reinterpret_cast<const device::Piece*>(base),
                             reinterpret_cast<const device::BlockRef*>(base + piece_bytes), table.blocks()};
  }
  guard.keep = true;
  slot = std::move(launches);  // device_release frees them
  return ok_status();
}

// Both parities' launches of every kind the exchange has (at realize():
// parity 0 reads and writes current(), parity 1 next()).
Status build_all_launches(DomainImpl& d) {
  for (int parity : {0, 1})
    for (MoveKind kind : {kPacks, kCopies, kUnpacks, kLinkPacks, kLinkUnpacks}) {
      const bool any = kind == kCopies                               ? !d.copies.empty()
                       : kind == kLinkPacks || kind == kLinkUnpacks ? !d.links.empty()
                                                                     : !d.peers.empty();
      if (any) DTMPI_TRY(build_launches(d, kind, parity));
    }
  return ok_status();
}

// Queues the launches of `kind` (built) on each GPU's exchange stream: a
// block per tile, or (narrow) overlap_blocks_per_sm blocks per SM of the GPU.
Status launch_moves(DomainImpl& d, OnDevice& on, MoveKind kind, device::Move how, bool narrow) {
  const auto& slot = d.launches[launch_index(d.parity, kind)];
  if (!slot) return Error{MPI_ERR_INTERN, "dtmpi::stencil: an exchange's launches were not made at realize()"};
  for (const GpuLaunch& l : *slot) {
    DTMPI_TRY(on.use(l.device));
    const size_t g = device_index(d, l.device);
    const uint64_t grid = narrow ? static_cast<uint64_t>(d.overlap_blocks_per_sm) * static_cast<uint64_t>(d.sm_count[g]) : 0;
    DTMPI_CUDA_CHECK(static_cast<cudaError_t>(device::launch(how, l.batch, d.streams[g], grid)));
  }
  return ok_status();
}

// Whether this round's copies and unpacks take the narrow grid: the
// program's interior kernel may be running beside them.
bool narrow_round(const DomainImpl& d) { return d.overlapping && d.overlap_blocks_per_sm > 0; }

// Runs `record` (launches on the exchange's stream) directly, or -- with
// graphs on -- replays its recording for the current swap() parity,
// recording it first. The launches of a kind are the same every exchange of
// a parity (same kernels, same arguments, same buffers), which is what makes
// one recording valid for all of them (thesis section 4.5.6). One GPU only
// (device_allocate() turns graphs off for a rank on several).
template <class Record>
Status replay(DomainImpl& d, MoveKind kind, Record record) {
  if (!d.graphs) return record();
  const bool narrow = kind != kPacks && narrow_round(d);
  void*& slot = d.graph_exec[static_cast<size_t>(2 * (d.parity * 3 + kind) + (narrow ? 1 : 0))];
  if (!slot) {
    DTMPI_CUDA_CHECK(cudaStreamBeginCapture(home_stream(d), cudaStreamCaptureModeThreadLocal));
    const Status recorded = record();
    cudaGraph_t graph = nullptr;
    // the capture is ended whatever happened, so the stream is usable again
    const cudaError_t ended = cudaStreamEndCapture(home_stream(d), &graph);
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
  DTMPI_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(slot), home_stream(d)));
  return ok_status();
}

// The staged path's copies of the packed buffers, on the home GPU's stream.
// With the subdomains on several GPUs the packs ran on their GPUs' streams:
// they are waited for first (before: the unpacks wait for these copies).
Status stage_packed(DomainImpl& d, OnDevice& on, bool to_host) {
  if (d.device_messages) return ok_status();  // dtmpi's MPI moves the device buffers
  if (to_host && d.streams.size() > 1) DTMPI_TRY(sync_all(d));
  DTMPI_TRY(on.use(d.devices.front()));
  for (Peer& p : d.peers) {
    const int64_t n = to_host ? p.send_bytes : p.recv_bytes;
    if (n <= 0) continue;
    if (to_host)
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(p.send_host, p.send_device, static_cast<size_t>(n), cudaMemcpyDeviceToHost,
                                       home_stream(d)));
    else
      DTMPI_CUDA_CHECK(cudaMemcpyAsync(p.recv_device, p.recv_host, static_cast<size_t>(n), cudaMemcpyHostToDevice,
                                       home_stream(d)));
  }
  if (!to_host && d.streams.size() > 1) DTMPI_CUDA_CHECK(cudaStreamSynchronize(home_stream(d)));
  return ok_status();
}

Status record_pack(DomainImpl& d) {
  OnDevice on;
  DTMPI_TRY(launch_moves(d, on, kPacks, device::Move::kPack, false));
  if (d.peer_copies) DTMPI_TRY(move_mirrors(d, on, true));
  return stage_packed(d, on, true);
}

Status record_copy_local(DomainImpl& d) {
  OnDevice on;
  if (d.launches[launch_index(d.parity, kCopies)])
    DTMPI_TRY(launch_moves(d, on, kCopies, device::Move::kCopy, narrow_round(d)));
  if (d.links.empty()) return ok_status();
  // between GPUs without kernels reaching across: packed on the source GPU,
  // copied, unpacked on the destination once every link into it has arrived
  DTMPI_TRY(launch_moves(d, on, kLinkPacks, device::Move::kPack, narrow_round(d)));
  // every copy queued before any wait: a copy B->A must not queue behind
  // B's wait for A->B
  for (const GpuLink& l : d.links) {
    DTMPI_TRY(on.use(d.devices[l.from]));
    const auto from = static_cast<cudaStream_t>(d.streams[l.from]);
    DTMPI_CUDA_CHECK(cudaMemcpyPeerAsync(l.in, d.devices[l.to], l.out, d.devices[l.from], static_cast<size_t>(l.bytes),
                                         from));
    DTMPI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(l.moved), from));
  }
  for (const GpuLink& l : d.links) {
    DTMPI_TRY(on.use(d.devices[l.to]));
    DTMPI_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(d.streams[l.to]), static_cast<cudaEvent_t>(l.moved), 0));
  }
  return launch_moves(d, on, kLinkUnpacks, device::Move::kUnpack, narrow_round(d));
}

Status record_unpack(DomainImpl& d) {
  OnDevice on;
  // device path: dtmpi's MPI_Waitall returned with the bytes in place
  // (docs/point-to-point.md: a receive completes once the data is there);
  // staged: the copy back to the home GPU was waited for (several GPUs)
  DTMPI_TRY(stage_packed(d, on, false));
  if (d.peer_copies) DTMPI_TRY(move_mirrors(d, on, false));
  return launch_moves(d, on, kUnpacks, device::Move::kUnpack, narrow_round(d));
}

}  // namespace

int current_device() noexcept {
  int device = -1;
  // a rank without a GPU answers -1 instead of failing: realize() reports
  // that later, on every rank, from device_allocate()
  if (!runtime::gpu_enabled() || !DTMPI_CUDA_PROBE(cudaGetDevice(&device))) return -1;
  return device;
}

std::vector<int> slot_devices(const DomainImpl& d) {
  std::vector<int> out(static_cast<size_t>(std::max(d.per_rank, 0)), -1);
  if (d.gpus_set.empty()) {
    std::fill(out.begin(), out.end(), current_device());
    return out;
  }
  int count = 0;
  if (!runtime::gpu_enabled() || !DTMPI_CUDA_PROBE(cudaGetDeviceCount(&count))) count = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    const int g = d.gpus_set[k % d.gpus_set.size()];
    out[k] = g >= 0 && g < count ? g : -2;
  }
  return out;
}

uint64_t device_uuid_digest(int device) noexcept {
  cudaDeviceProp prop{};
  if (device < 0 || !runtime::gpu_enabled() || !DTMPI_CUDA_PROBE(cudaGetDeviceProperties(&prop, device))) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the 16 bytes
  for (char c : prop.uuid.bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

Status device_allocate(DomainImpl& d) {
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
  const std::vector<int> by_slot = slot_devices(d);
  d.devices.clear();
  for (int g : by_slot) {
    if (g < 0) return Error{MPI_ERR_ARG, "dtmpi::stencil: no usable CUDA device for this rank's subdomains"};
    if (std::find(d.devices.begin(), d.devices.end(), g) == d.devices.end()) d.devices.push_back(g);
  }
  d.peer_copies = false;
  if (d.devices.size() > 1) {
    d.graphs = false;  // one recording per GPU would be needed (set_cuda_graphs() says so)
    // kernels over peer access where every pair of the GPUs has it (one
    // launch per kind and GPU), else copies between them
    auto reach = all_peer_access(d.devices);
    if (!reach) return reach.error();
    d.peer_copies = !runtime::config().stencil_peer_access || !reach.value();
    if (!d.peer_copies) DTMPI_TRY(enable_peer_access(d.devices));
  }
  OnDevice on;
  d.overlap_blocks_per_sm = d.overlap_blocks_set ? *d.overlap_blocks_set : runtime::config().stencil_overlap_blocks;
  d.sm_count.clear();
  for (int g : d.devices) {
    DTMPI_TRY(on.use(g));
    // the highest priority: an overlapped exchange's blocks are dispatched
    // as soon as SM room frees, ahead of the interior kernel's waiting ones
    int least = 0, greatest = 0, sms = 0;
    DTMPI_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    DTMPI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g));
    d.sm_count.push_back(std::max(sms, 1));
    cudaStream_t stream = nullptr;
    DTMPI_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    d.streams.push_back(stream);
  }
  if (d.devices.size() == 1) {  // deferred sends (domain_impl.hpp): one GPU only
    DTMPI_TRY(on.use(d.devices.front()));
    cudaEvent_t done = nullptr;
    DTMPI_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    d.packs_done = done;
  }
  for (Subdomain& s : d.subs) {
    const int g = by_slot[static_cast<size_t>(d.slot_in_rank[static_cast<size_t>(s.id())])];
    Access::device(s) = g;
    DTMPI_TRY(on.use(g));
    cudaStream_t stream = static_cast<cudaStream_t>(d.streams[device_index(d, g)]);
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
  DTMPI_TRY(on.use(d.devices.front()));
  for (Peer& p : d.peers) {
    const size_t sb = static_cast<size_t>(std::max<int64_t>(p.send_bytes, 1));
    const size_t rb = static_cast<size_t>(std::max<int64_t>(p.recv_bytes, 1));
    DTMPI_CUDA_CHECK(cudaMalloc(&p.send_device, sb));
    DTMPI_CUDA_CHECK(cudaMalloc(&p.recv_device, rb));
    if (d.device_messages) continue;  // MPI takes the device buffers themselves
    DTMPI_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p.send_host), sb));
    DTMPI_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p.recv_host), rb));
  }
  if (d.peer_copies) DTMPI_TRY(prepare_peer_copies(d, on));
  DTMPI_TRY(build_all_launches(d));
  return sync_all(d);
}

void device_release(DomainImpl& d) noexcept {
  for (void* st : d.streams) cudaStreamSynchronize(static_cast<cudaStream_t>(st));
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
    for (void* m : p.send_mirror) cudaFree(m);
    for (void* m : p.recv_mirror) cudaFree(m);
    p.send_mirror.clear();
    p.recv_mirror.clear();
  }
  for (GpuLink& l : d.links) {
    cudaFree(l.out);
    cudaFree(l.in);
    if (l.moved) cudaEventDestroy(static_cast<cudaEvent_t>(l.moved));
  }
  d.links.clear();
  d.mirror_ranges.clear();
  d.peer_copies = false;
  for (auto& slot : d.launches) {
    if (slot)
      for (GpuLaunch& l : *slot) cudaFree(l.table);
    slot.reset();
  }
  for (void*& g : d.graph_exec) {
    if (g) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
    g = nullptr;
  }
  for (void* st : d.streams) cudaStreamDestroy(static_cast<cudaStream_t>(st));
  d.streams.clear();
  if (d.packs_done) cudaEventDestroy(static_cast<cudaEvent_t>(d.packs_done));
  d.packs_done = nullptr;
  d.sends_pending = false;
  d.devices.clear();
  cudaGetLastError();  // nothing to report from a release
}

Status device_pack(DomainImpl& d) {
  if (!d.peers.empty()) {
    DTMPI_TRY(replay(d, kPacks, [&] { return record_pack(d); }));
  }
  if (d.sends_pending) {  // one GPU, device path: the packs are all on the home stream
    OnDevice on;
    DTMPI_TRY(on.use(d.devices.front()));
    DTMPI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(d.packs_done), home_stream(d)));
    return ok_status();
  }
  // The bytes must be in place before MPI_Isend reads them: in host memory
  // (staged), or in the device buffer (device path) -- dtmpi orders its GPU
  // work after the legacy default stream only (DTMPI_GPU_ORDER=legacy), and
  // not at all with DTMPI_GPU_ORDER=stream, never after these non-blocking
  // streams, so the packs are waited for here under either setting.
  return sync_all(d);
}

Result<bool> device_packs_done(DomainImpl& d, bool wait) {
  const auto done = static_cast<cudaEvent_t>(d.packs_done);
  if (wait) {
    DTMPI_CUDA_CHECK(cudaEventSynchronize(done));
    return true;
  }
  // NotReady is an answer, not an error: nothing to clear (a launch error the
  // program has pending from its own kernels stays its to read)
  const cudaError_t e = cudaEventQuery(done);
  if (e == cudaErrorNotReady) return false;
  DTMPI_CUDA_CHECK(e);
  return true;
}

Status device_copy_local(DomainImpl& d) {
  // queued behind the packs; finish_exchange() waits for the streams
  if (d.copies.empty()) return ok_status();
  return replay(d, kCopies, [&] { return record_copy_local(d); });
}

Status device_unpack(DomainImpl& d) {
  if (!d.peers.empty()) {
    DTMPI_TRY(replay(d, kUnpacks, [&] { return record_unpack(d); }));
  }
  return sync_all(d);
}

}  // namespace dtmpi::stencil
