// dtmpi::stencil -- a halo-exchange library for 3D stencil codes (the
// library of the Pearson thesis, chapter 4; docs/stencil.md has a complete
// example). A program describes its grid (global extent, ghost radius,
// periodicity, quantities of any trivially copyable type); realize()
// partitions it over the ranks of a communicator (nodes first, then the
// ranks of a node, then several subdomains per rank), allocates every
// quantity with its ghost shell, and builds the exchange plan; exchange()
// (or start_exchange() / finish_exchange() around interior compute) fills
// every ghost shell from the neighbours' interiors.
//
// Errors: every function of this header reports bad input and failed MPI or
// CUDA calls by throwing dtmpi::stencil::StencilError. The collective calls
// (realize()) throw on every rank of the communicator with the same message
// when any rank's input is wrong, so no rank is left waiting in a collective.
#pragma once
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace dtmpi::stencil {

// Bad input, a call out of order, or a failed MPI / CUDA call.
class StencilError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Dim3 {
  int64_t x = 0, y = 0, z = 0;
  int64_t& operator[](int axis) { return axis == 0 ? x : axis == 1 ? y : z; }
  int64_t operator[](int axis) const { return axis == 0 ? x : axis == 1 ? y : z; }
  bool operator==(const Dim3&) const = default;
  int64_t volume() const { return x * y * z; }
};

// Points [lo, hi) in global coordinates.
struct Box {
  Dim3 lo, hi;
  Dim3 size() const { return {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z}; }
  int64_t volume() const { return empty() ? 0 : size().volume(); }
  bool empty() const { return hi.x <= lo.x || hi.y <= lo.y || hi.z <= lo.z; }
  bool contains(const Dim3& p) const {
    return p.x >= lo.x && p.x < hi.x && p.y >= lo.y && p.y < hi.y && p.z >= lo.z && p.z < hi.z;
  }
  bool operator==(const Box&) const = default;
};

// Ghost width on each side of each axis (the stencil's reach in that
// direction); an edge or corner ghost region is the product of its axes'
// widths. A width of 0 on one side means nothing is exchanged there.
struct Radius {
  std::array<std::array<int, 2>, 3> width{};  // [axis][0: low side, 1: high side]
  static Radius uniform(int r) {
    Radius x;
    for (auto& a : x.width) a = {r, r};
    return x;
  }
  Radius& set(int axis, int low, int high) {
    width.at(static_cast<size_t>(axis)) = {low, high};
    return *this;
  }
  int low(int axis) const { return width[static_cast<size_t>(axis)][0]; }
  int high(int axis) const { return width[static_cast<size_t>(axis)][1]; }
  bool operator==(const Radius&) const = default;
};

enum class Memory { kHost, kDevice };

// How a device-memory domain's messages to other ranks travel (one packed
// buffer per peer and direction set either way; docs/stencil.md, "Methods").
enum class PeerPath {
  // kDevice where dtmpi is the MPI in front (its MPI_Init ran: libdtmpi
  // preloaded or linked before -lmpi, not DTMPI_DISABLE=1), else kStaged
  kAuto,
  // packed on the GPU, copied to pinned host memory and sent from there by
  // the system MPI: any MPI, CUDA-aware or not, never sees a device pointer
  kStaged,
  // the packed device buffers handed to MPI_Isend / MPI_Irecv: dtmpi moves
  // them (CUDA IPC between ranks of a node, its staged or pipelined methods
  // across nodes); realize() refuses it where dtmpi is not in front
  kDevice,
  // stats() of a host-memory domain: its messages leave from host memory
  // (not a choice: set_peer_path() takes the three above)
  kHost,
};
const char* to_string(PeerPath p);

// A quantity of element type T, as add_quantity<T>() returned it.
template <class T>
struct Quantity {
  int index = -1;
};

// One quantity of one subdomain, addressed by global coordinate: any point of
// the subdomain's box and its ghost shell (ghosts outside the global domain
// have coordinates below 0 or at/after the extent, also where the boundary is
// periodic: the accessor does not wrap). Host memory only for operator();
// ptr() is valid for device memory too (for kernels).
template <class T>
class Accessor {
 public:
  Accessor() = default;
  Accessor(void* base, Dim3 alloc_lo, int64_t pitch, int64_t rows)
      : base_(static_cast<char*>(base)), lo_(alloc_lo), pitch_(pitch), slice_(pitch * rows) {}
  T* ptr(int64_t x, int64_t y, int64_t z) const {
    return reinterpret_cast<T*>(base_ + (z - lo_.z) * slice_ + (y - lo_.y) * pitch_) + (x - lo_.x);
  }
  T& operator()(int64_t x, int64_t y, int64_t z) const { return *ptr(x, y, z); }
  int64_t pitch_bytes() const { return pitch_; }
  int64_t slice_bytes() const { return slice_; }

 private:
  char* base_ = nullptr;
  Dim3 lo_;
  int64_t pitch_ = 0, slice_ = 0;
};

// One subdomain this rank owns.
class Subdomain {
 public:
  int id() const { return id_; }            // 0 .. subdomain count - 1, the same on every rank
  Dim3 grid_index() const { return index_; } // position in the global grid of subdomains
  Box box() const { return box_; }           // the points it owns
  Box allocated() const;                     // box() plus the ghost shell
  // The points whose stencil reads no ghost (computable while the exchange
  // runs), and the rest of box() as disjoint boxes (computable after it).
  Box interior() const;
  std::vector<Box> exterior() const;

  template <class T>
  Accessor<T> current(Quantity<T> q) const {
    return Accessor<T>(current_.at(static_cast<size_t>(q.index)), allocated().lo, pitch_.at(static_cast<size_t>(q.index)),
                       allocated().size().y);
  }
  template <class T>
  Accessor<T> next(Quantity<T> q) const {
    return Accessor<T>(next_.at(static_cast<size_t>(q.index)), allocated().lo, pitch_.at(static_cast<size_t>(q.index)),
                       allocated().size().y);
  }
  // Untyped: the allocation of quantity `q` (first byte = allocated().lo), its row pitch in bytes.
  void* current_data(int q) const { return current_.at(static_cast<size_t>(q)); }
  void* next_data(int q) const { return next_.at(static_cast<size_t>(q)); }
  int64_t pitch(int q) const { return pitch_.at(static_cast<size_t>(q)); }
  int device() const { return device_; }  // CUDA device of a device-memory domain, else -1 (set_gpus())

 private:
  friend class DistributedDomain;
  friend struct Access;
  int id_ = -1;
  Dim3 index_;
  Box box_;
  Radius radius_;
  std::vector<void*> current_, next_;
  std::vector<int64_t> pitch_;
  int device_ = -1;
};

// What one exchange moves (the plan realize() built; the same every exchange).
struct PeerTraffic {
  int rank = 0;  // in the domain's communicator
  int64_t send_bytes = 0, recv_bytes = 0;
  bool same_node = true;  // the peer shares this rank's node
  // host domains: the bytes travel through the node's shared-memory segment
  // (packed straight into the peer's buffer), not as an MPI message
  bool shared_memory = false;
};
struct ExchangeStats {
  // in the order the messages are issued: other nodes' first, then the
  // node's; each group largest first
  std::vector<PeerTraffic> by_peer;
  int peers = 0;              // other ranks this rank exchanges with
  int64_t messages = 0;       // MPI messages sent per exchange (one per peer not in shared memory)
  int64_t mpi_bytes = 0;      // bytes sent through MPI per exchange
  int64_t shm_bytes = 0;      // bytes packed into peers' shared-memory buffers per exchange
  // Counters over every exchange so far: peers' buffers this rank unpacked,
  // by the way they came (which path really ran, for tests and benchmarks).
  int64_t received_shm = 0, received_mpi = 0;
  int64_t local_copies = 0;   // same-rank region copies (all quantities of a direction each)
  int64_t local_bytes = 0;    // bytes copied between this rank's own subdomains
  PeerPath peer_path = PeerPath::kHost;  // how the MPI messages travel (kStaged or kDevice for device memory)
  // Device domains: the blocks per SM of the same-GPU copy and unpack
  // launches of an overlapped exchange (set_overlap_blocks_per_sm(); 0: one
  // block per tile, as exchange()), and the overlapped exchanges so far.
  int overlap_blocks_per_sm = 0;
  int64_t overlapped_exchanges = 0;
  // Of those, the ones whose packs ran beside the program (a device domain
  // on one GPU with MPI peers, device path): start_exchange() queued them and
  // returned, and the sends went out once they were done (progress(),
  // finish_exchange()).
  int64_t deferred_sends = 0;
  // Device domains on several GPUs of a rank: bytes between its GPUs move by
  // copies (packed, cudaMemcpyPeerAsync, unpacked) -- the GPUs lack peer
  // access, or DTMPI_STENCIL_PEER_ACCESS=0 -- instead of kernels over peer access.
  bool gpu_peer_copies = false;
};

struct DomainImpl;

class DistributedDomain {
 public:
  // `comm` is duplicated at realize(); `extent` is the global grid in points.
  DistributedDomain(MPI_Comm comm, Dim3 extent);
  ~DistributedDomain();
  DistributedDomain(const DistributedDomain&) = delete;
  DistributedDomain& operator=(const DistributedDomain&) = delete;

  // Configuration: before realize() only (Error afterwards).
  DistributedDomain& set_radius(int r);
  DistributedDomain& set_radius(const Radius& r);
  DistributedDomain& set_periodic(bool x, bool y, bool z);
  DistributedDomain& set_memory(Memory m);
  // Device-memory domains: the path of the messages to other ranks (default
  // kAuto); forcing one is for tests and benchmarks.
  DistributedDomain& set_peer_path(PeerPath p);
  // Several subdomains per rank (several GPUs of a rank, or several
  // subdomains of one GPU or CPU rank); neighbours owned by the same rank are
  // copied directly, without MPI.
  DistributedDomain& set_subdomains_per_rank(int n);
  // Placement inside a node (thesis section 4.4; docs/stencil.md,
  // "Placement"): which rank of a node owns which of the node's subdomains,
  // chosen to keep the most exchanged bytes on the cheapest links (same
  // rank, then the best-connected GPUs). On by default; false keeps the
  // partition's order (consecutive subdomains per rank, ranks in order).
  DistributedDomain& set_placement(bool optimize);
  // Device domains: the bandwidth between the node's GPUs in GB/s, an m x m
  // row-major matrix by CUDA device ordinal (as cudaGetDevice() names the
  // GPU each rank uses; every rank of a node must see the same numbering).
  // Without it, where a node's subdomains sit on two or more GPUs, realize()
  // measures it (the node's first rank times copies between those GPUs,
  // docs/stencil.md "Placement"); with one GPU every pair of ranks counts alike.
  DistributedDomain& set_gpu_bandwidth(std::vector<double> gbps);
  // Device domains: the CUDA devices (ordinals) of this rank's subdomains,
  // the subdomain in the rank's slot k (of set_subdomains_per_rank(n)) on
  // gpus[k % gpus.size()]; Subdomain::device() tells. Subdomains of one rank
  // on different GPUs exchange by kernels over peer access (realize()
  // enables it) where every pair of the rank's GPUs has it, else -- and with
  // DTMPI_STENCIL_PEER_ACCESS=0 -- by copies between them
  // (stats().gpu_peer_copies). Per rank: ranks may name different GPUs.
  // Default (or empty): the device current at realize().
  DistributedDomain& set_gpus(std::vector<int> devices);
  // Device domains: record the pack, same-rank copy and unpack launches as
  // CUDA graphs at the first exchange and replay them (thesis section
  // 4.5.6); default DTMPI_STENCIL_GRAPHS (off). No effect on host memory,
  // nor on a rank whose subdomains are on several GPUs (set_gpus()).
  DistributedDomain& set_cuda_graphs(bool on);
  bool cuda_graphs() const;  // after realize(): whether the exchanges replay graphs
  // Device domains: the grid of the kernels an overlapped exchange runs
  // while the program's interior kernel may still be running -- the copies
  // between this rank's subdomains (start_exchange()) and the unpacks
  // (finish_exchange()) -- in blocks per SM of their GPU, each block moving
  // tile after tile; 0: one block per tile, as exchange() launches them.
  // A full grid is fastest alone, but its blocks queue behind the interior
  // kernel's for the SMs; a few blocks per SM run beside it and hide most
  // of the exchange (docs/stencil.md, "Overlap on the GPU"). Default
  // DTMPI_STENCIL_OVERLAP_BLOCKS (1); at most 32.
  DistributedDomain& set_overlap_blocks_per_sm(int blocks);
  // Host-memory domains: peers on this rank's node (MPI_COMM_TYPE_SHARED, or
  // DTMPI_RANKS_PER_NODE's emulated nodes) exchange through a shared-memory
  // segment instead of MPI messages; default DTMPI_STENCIL_SHM (on). Off
  // forces messages to every peer. Used only if every rank can (realize()
  // falls back to messages everywhere otherwise); stats() says per peer.
  DistributedDomain& set_host_shared_memory(bool on);
  template <class T>
  Quantity<T> add_quantity(const std::string& name) {
    static_assert(std::is_trivially_copyable_v<T>, "a quantity's element type must be trivially copyable");
    return Quantity<T>{add_quantity_bytes(name, sizeof(T), alignof(T), nullptr)};
  }
  // A quantity whose stencil reaches less far: only its radius (at most the
  // domain's on every side) is exchanged; it is allocated with the domain's.
  template <class T>
  Quantity<T> add_quantity(const std::string& name, const Radius& r) {
    static_assert(std::is_trivially_copyable_v<T>, "a quantity's element type must be trivially copyable");
    return Quantity<T>{add_quantity_bytes(name, sizeof(T), alignof(T), &r)};
  }

  // Collective over the communicator: validates the configuration on every
  // rank (the same on all, radius within every subdomain, extent splittable),
  // partitions, allocates (zero-filled) and plans the exchange.
  void realize();
  bool realized() const;

  std::vector<Subdomain>& subdomains();  // this rank's, after realize()
  Dim3 extent() const;
  Dim3 node_grid() const;   // subdomains of the first level (nodes) per axis
  Dim3 local_grid() const;  // subdomains per node per axis
  Dim3 grid() const;        // node_grid * local_grid
  int nodes() const;
  Box box_of(Dim3 grid_index) const;  // any subdomain's box
  int owner_of(Dim3 grid_index) const;  // the rank that owns it
  ExchangeStats stats() const;
  // One line: the partition, this rank's node's placement (subdomain:rank of
  // the node, its cost against the partition's order) and the peer path.
  std::string describe() const;

  // Fills every ghost shell of current(): blocking, or in two halves with
  // compute between (the interior of next() may be computed from current()
  // meanwhile; current()'s box must not be written until finish_exchange()).
  void exchange();
  void start_exchange();
  void finish_exchange();
  // Between the two: lets the MPI move the messages on (many MPIs progress
  // large messages only inside MPI calls); call it now and then during long
  // interior compute. Never blocks. Returns true once every message has
  // arrived (shared-memory peers: once their bytes are in the buffers).
  bool progress();
  // current <-> next, for every quantity of every subdomain (local, no communication).
  void swap();

 private:
  int add_quantity_bytes(const std::string& name, size_t size, size_t align, const Radius* radius);
  std::unique_ptr<DomainImpl> impl_;
};

}  // namespace dtmpi::stencil
