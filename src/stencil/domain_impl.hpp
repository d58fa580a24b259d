// The state behind DistributedDomain (include/dtmpi/stencil.hpp): the
// configuration, the partition, this rank's subdomains and the exchange plan
// realize() builds once; the exchange replays the plan (plan.cpp builds it,
// exchange.cpp runs it, host.cpp / device.cu move the bytes).
#pragma once
#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "dtmpi/stencil.hpp"
#include "stencil/device_kernels.hpp"
#include "stencil/partition.hpp"
#include "transport/node_channels.hpp"

namespace dtmpi::stencil {

struct QuantityInfo {
  std::string name;
  size_t size = 0, align = 0;
  std::optional<Radius> radius;  // its own, else the domain's
};

// Grants the implementation the subdomains' private members.
struct Access {
  static Subdomain make(int id, Dim3 index, Box box, const Radius& r) {
    Subdomain s;
    s.id_ = id;
    s.index_ = index;
    s.box_ = box;
    s.radius_ = r;
    return s;
  }
  static std::vector<void*>& current(Subdomain& s) { return s.current_; }
  static std::vector<void*>& next(Subdomain& s) { return s.next_; }
  static std::vector<int64_t>& pitch(Subdomain& s) { return s.pitch_; }
  static int& device(Subdomain& s) { return s.device_; }
};

// One direction's region of one of this rank's subdomains (`sub`: index into
// subs), in global coordinates of that subdomain's allocation: `box` for the
// domain's radius, `boxes[q]` for quantity q's (empty where q's stencil does
// not reach that direction).
struct Region {
  int sub = 0;
  Box box;
  std::vector<Box> boxes;
};

// The same-rank copy of one direction: all quantities of `from` into `to`.
struct LocalCopy {
  Region from, to;
};

// Everything exchanged with one other rank: one message each way per
// exchange (or one shared-memory buffer each way: `shared`), the directions
// in the same order on both sides (by sending subdomain id, then direction),
// each direction all quantities in a row.
struct Peer {
  int rank = 0;
  bool same_node = true;  // another node's messages are slower: issued first
  // host domains, a peer of this node with the segment in place: the send
  // bytes are packed into shm_out's buffer, received ones unpacked from
  // shm_in's (channels of d.channels; closed where nothing flows that way)
  bool shared = false;
  transport::ChannelEnd shm_in, shm_out;
  std::vector<Region> send, recv;
  int64_t send_bytes = 0, recv_bytes = 0;
  char* send_host = nullptr;  // what MPI sends / receives (pinned for staged device domains)
  char* recv_host = nullptr;
  void* send_device = nullptr;  // device domains: the packed bytes on the GPU (what MPI
  void* recv_device = nullptr;  // sends / receives on the device path)
  // DomainImpl::peer_copies: by GPU index (devices' order; null for the home
  // GPU), the same buffers on that GPU, which its subdomains pack into and
  // unpack from at the home buffers' offsets
  std::vector<void*> send_mirror, recv_mirror;
};

// peer_copies: the bytes of one peer's buffer that GPU `gpu`'s subdomains
// pack or unpack (consecutive regions of that GPU), moved between its mirror
// and the home GPU's buffer.
struct MirrorRange {
  size_t peer = 0, gpu = 0;
  int64_t offset = 0, bytes = 0;
  bool send = true;
};

// peer_copies: the same-rank copies from the subdomains on GPU index `from`
// to those on `to`: packed into `out` on `from`, copied to `in` on `to`,
// unpacked there; `moved`: the cudaEvent_t after the copy, which `to`'s
// stream waits for.
struct GpuLink {
  size_t from = 0, to = 0;
  std::vector<LocalCopy> copies;
  int64_t bytes = 0;
  void* out = nullptr;
  void* in = nullptr;
  void* moved = nullptr;
};

// Device domains: one GPU's launch of one kind of move (device.cpp), its
// table (pieces, each block's piece and tile) in that GPU's memory.
struct GpuLaunch {
  int device = 0;
  void* table = nullptr;
  device::DeviceBatch batch;
};

struct DomainImpl {
  MPI_Comm user_comm = MPI_COMM_NULL;
  MPI_Comm comm = MPI_COMM_NULL;  // duplicate at realize(): the exchange's own messages
  int rank = 0, size = 1;
  Dim3 extent;
  Radius radius = Radius::uniform(1);
  std::array<bool, 3> periodic{true, true, true};
  Memory memory = Memory::kHost;
  PeerPath peer_path = PeerPath::kAuto;  // as set; device_messages is what realize() made of it
  bool device_messages = false;          // device domain, messages posted on device buffers (dtmpi in front)
  int per_rank = 1;
  std::vector<QuantityInfo> quantities;
  bool optimize_placement = true;    // set_placement()
  std::vector<double> gpu_bandwidth;  // set_gpu_bandwidth(): GB/s by device ordinal, m x m; empty: uniform
  std::string placement_text;         // realize()'s placement of this rank's node, for describe()
  std::vector<int> gpus_set;          // set_gpus(): this rank's devices by slot (empty: the current one)
  // by subdomain id: its slot within its rank (0 .. per_rank - 1), as the
  // placement put it; a device domain's subdomain is on gpus[slot % size]
  std::vector<int> slot_in_rank;

  std::optional<bool> shm_set;  // set_host_shared_memory(); else DTMPI_STENCIL_SHM
  // host domains: the node's shared-memory channels, where every rank could
  // create them (realize(): connect_node_peers), else null
  std::unique_ptr<transport::NodeChannels> channels;
  uint64_t exchanges = 0;  // start_exchange()s so far: the round number of the channels
  std::vector<size_t> shm_unread;  // peers (indices) whose shared-memory bytes this round are not unpacked yet
  int64_t received_shm = 0, received_mpi = 0;  // buffers unpacked so far (stats())

  bool realized = false, in_flight = false;
  std::optional<Partition> partition;
  std::vector<int> owner;  // subdomain id -> rank
  std::vector<int> node_of_rank;  // rank -> node index (realize())
  std::vector<Subdomain> subs;
  std::vector<LocalCopy> copies;
  std::vector<Peer> peers;
  std::vector<MPI_Request> requests;
  // device domains: the devices this rank's subdomains are on (home first:
  // the peers' packed buffers live there) and the exchange's cudaStream_t on each
  std::vector<int> devices;
  std::vector<void*> streams;
  // CUDA graphs (set_cuda_graphs(), DTMPI_STENCIL_GRAPHS): the pack, local
  // copy and unpack launches recorded once per swap() parity (the kernels'
  // pointers are current()'s, which alternate) and replayed: cudaGraphExec_t
  // [2 * (parity * 3 + kPacks / kCopies / kUnpacks) + narrow], null until
  // recorded (narrow: an overlapped exchange's grid of a few blocks per SM)
  std::optional<bool> graphs_set;  // set_cuda_graphs(); else the configuration's
  bool graphs = false;             // what realize() made of it (device domains only)
  int parity = 0;                  // swap()s, mod 2
  std::array<void*, 12> graph_exec{};
  // the batched launches, [parity * kMoveKinds + kind] (device.cpp's
  // MoveKind); built at realize() for both parities (their pointers are current()'s too)
  std::array<std::optional<std::vector<GpuLaunch>>, 10> launches;
  // A rank on several GPUs without peer access between every pair of them
  // (or DTMPI_STENCIL_PEER_ACCESS=0): bytes between its GPUs move by copies
  // (device.cpp): the peers' buffers through mirrors, the same-rank copies
  // between GPUs through links; the same-rank copies on one GPU stay kernels.
  bool peer_copies = false;
  std::vector<MirrorRange> mirror_ranges;
  std::vector<GpuLink> links;
  // Overlapped exchanges (set_overlap_blocks_per_sm(),
  // DTMPI_STENCIL_OVERLAP_BLOCKS): their copy and unpack launches' grid in
  // blocks per SM (0: a block per tile), each GPU's SMs (by devices' order),
  // and the overlapped exchanges so far (stats()).
  std::optional<int> overlap_blocks_set;
  int overlap_blocks_per_sm = 0;
  std::vector<int> sm_count;
  bool blocking = false;     // exchange() is running start_exchange(): not overlapped
  bool overlapping = false;  // this round was started by start_exchange() itself
  int64_t overlapped_exchanges = 0;
  // An overlapped exchange of a device domain on one GPU, device path
  // (exchange.cpp says why not staged), queues its packs and returns without
  // waiting for them: they run beside the program's interior kernel, and the
  // sends go out once they are done (progress(), finish_exchange()). `packs_done`: the cudaEvent_t recorded after them;
  // `sends_pending`: this round's sends are not posted yet.
  void* packs_done = nullptr;
  bool sends_pending = false;
  int64_t deferred_sends = 0;  // rounds whose sends waited for packs running beside the program (stats())

  ~DomainImpl();
  int64_t region_bytes(const Region& r) const;  // all quantities
  const Radius& radius_of(size_t q) const { return quantities[q].radius ? *quantities[q].radius : radius; }
};

// Whether the MPI_* symbols of this process are dtmpi's, with its MPI_Init
// run (front.cpp): only then may a device pointer be handed to them.
bool dtmpi_in_front();
// exchange.cpp: the requests of an exchange left in flight, settled (the
// receives cancelled) by the MPI that posted them, before the buffers go.
void settle_requests(DomainImpl& d) noexcept;

// The points a subdomain sends in direction `d`, and the ghost points its
// neighbour receives them into (global coordinates of each one's allocation).
Box send_box(const Box& owned, Dim3 d, const Radius& r);
Box ghost_box(const Box& owned, Dim3 d, const Radius& r);

// domain_place.cpp: d.owner, every subdomain's rank, placed inside each node
// (placement.hpp) unless set_placement(false). Collective where the GPUs of
// the ranks are needed (a bandwidth matrix on a device domain).
Status assign_owners(DomainImpl& d, const std::vector<std::vector<int>>& nodes);
// device.cpp: the CUDA device current on this rank, -1 without a usable GPU
int current_device() noexcept;
// This rank's device for each slot (device domains; per_rank entries): set_gpus()'s
// list repeated, or the current device; -1 without a GPU.
std::vector<int> slot_devices(const DomainImpl& d);
// A 64-bit digest of each device's UUID (0 where unknown), to check that
// ranks of a node name the same GPU by the same ordinal.
uint64_t device_uuid_digest(int device) noexcept;

// plan.cpp: the local copies and the peers' regions (after subs and owner).
Status build_plan(DomainImpl& d);
// shared.cpp: collective; host domains with shared memory wanted: the node's
// channels, the peers of the node marked `shared` (their message buffers
// freed) -- on every rank, or on none where any rank could not create them.
Status connect_node_peers(DomainImpl& d);
// host.cpp / device.cu: storage and the byte movement of each memory kind.
Status allocate_storage(DomainImpl& d);
void release_storage(DomainImpl& d) noexcept;
Status pack_peers(DomainImpl& d);        // every peer's send bytes, ready for MPI
Status copy_local(DomainImpl& d);        // the same-rank directions
Status unpack_peers(DomainImpl& d);      // every peer's received bytes into the ghosts
// host.cpp: one peer's send regions packed into `out` / its received bytes
// unpacked from `in` (the shared-memory peers' buffers)
void pack_peer(DomainImpl& d, const Peer& p, char* out);
void unpack_peer(DomainImpl& d, const Peer& p, const char* in);
// device.cu (or device_nocuda.cpp)
Status device_allocate(DomainImpl& d);
void device_release(DomainImpl& d) noexcept;
// (device_pack with d.sends_pending set: queued, the event recorded, not waited for)
Status device_pack(DomainImpl& d);
// whether the queued packs are done (wait: until they are)
Result<bool> device_packs_done(DomainImpl& d, bool wait);
Status device_copy_local(DomainImpl& d);
Status device_unpack(DomainImpl& d);

}  // namespace dtmpi::stencil
