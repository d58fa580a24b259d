#include "transport/onesided.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "base/system_mpi.hpp"
#include "runtime/config.hpp"
#include "transport/peers.hpp"

namespace dtmpi::transport {

namespace {

std::atomic<unsigned> g_segments{0};

// Whether every rank of `comm` shares this node (DTMPI_RANKS_PER_NODE emulates
// nodes of that many consecutive ranks, as placement does).
Result<bool> one_node(MPI_Comm comm, int size) {
  const int64_t emulated = runtime::config().ranks_per_node;
  if (emulated > 0 && emulated < size) return false;
  MPI_Comm node = MPI_COMM_NULL;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split_type)(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_size = 0;
  REAL(MPI_Comm_size)(node, &node_size);
  REAL(MPI_Comm_free)(&node);
  return node_size == size;
}

}  // namespace

void backoff(int& spins) {
  // ~1-2 us of pauses before the first yield: a peer on another core answers
  // in well under that; one waiting for this core gets it at the first yield
  if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  // The system MPI progresses only inside its calls: a send this rank left
  // pending (an MPI_Issend freed before a barrier, a rendezvous message
  // whose data its receiver still waits for) must move while this rank waits
  // here, or its receiver never reaches the collective this rank waits for
  // (mpi4py's pkl5 test hung so at 4 ranks). A probe turns the system MPI's
  // progress engine once -- on dtmpi's private communicator, whose peers are
  // the other ranks: MPICH 4.0.2 progresses only the self path for a probe on
  // MPI_COMM_SELF, so a pending MPI_Issend to a rank waiting in MPI_Recv
  // never moved there once MPI_COMM_WORLD's collective state was made at
  // MPI_Init (coll_*_progress_np3). A probe consumes nothing.
  if ((spins & 7) == 0) {
    int flag = 0;
    const MPI_Comm peers = peers_ready() ? private_comm() : MPI_COMM_NULL;
    REAL(MPI_Iprobe)(MPI_ANY_SOURCE, MPI_ANY_TAG, peers != MPI_COMM_NULL ? peers : MPI_COMM_SELF, &flag,
                     MPI_STATUS_IGNORE);
  }
  sched_yield();
}

void NodeSegment::wait(const PaddedFlag& f, uint64_t at_least) {
  int spins = 0;
  while (!test(f, at_least)) backoff(spins);
}

// Nothing for n == 0: a zero-byte side may be a null pointer (memcpy's
// arguments must not be, whatever the count).
void NodeSegment::put(char* remote, const void* src, size_t n) {
  if (n) std::memcpy(remote, src, n);
}
void NodeSegment::get(void* dst, const char* remote, size_t n) {
  if (n) std::memcpy(dst, remote, n);
}

Result<char*> map_node_shared(MPI_Comm comm, size_t bytes) {
  int rank = 0, size = 0;
  REAL(MPI_Comm_rank)(comm, &rank);
  REAL(MPI_Comm_size)(comm, &size);
  auto local = one_node(comm, size);
  if (!local) return local.error();
  if (!local.value()) return static_cast<char*>(nullptr);

  // the leader creates and sizes the object; every rank maps it by name
  char name[64] = {};
  int ok = 1;
  if (rank == 0) {
    std::snprintf(name, sizeof name, "/dtmpi-shm-%d-%u", static_cast<int>(getpid()), g_segments.fetch_add(1));
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    ok = fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0;
    if (fd >= 0) close(fd);
    if (!ok) {
      if (fd >= 0) shm_unlink(name);
      name[0] = '\0';
    }
  }
  DTMPI_MPI_CHECK(REAL(MPI_Bcast)(name, sizeof name, MPI_CHAR, 0, comm));
  char* base = nullptr;
  if (name[0]) {
    const int fd = shm_open(name, O_RDWR, 0600);
    void* p = fd >= 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    ok = p != MAP_FAILED;
    int world_rank = -1;
    REAL(MPI_Comm_rank)(MPI_COMM_WORLD, &world_rank);
    if (ok && world_rank == runtime::test_hooks().shm_fail_rank) {  // the test suite's fault
      munmap(p, bytes);
      ok = 0;
    }
    if (ok) base = static_cast<char*>(p);
  } else {
    ok = 0;
  }
  // every rank has mapped it (or failed) before the name goes away; the
  // pages stay until the last unmap
  int all = 0;
  const int rc = REAL(MPI_Allreduce)(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0 && name[0]) shm_unlink(name);
  if (rc != MPI_SUCCESS || !all) {
    if (base) munmap(base, bytes);
    if (rc != MPI_SUCCESS) return Error{rc, "MPI_Allreduce of the shared-memory outcome"};
    return static_cast<char*>(nullptr);
  }
  return base;
}

Result<std::unique_ptr<NodeSegment>> NodeSegment::create(MPI_Comm comm, size_t scratch) {
  std::unique_ptr<NodeSegment> s(new NodeSegment);
  REAL(MPI_Comm_rank)(comm, &s->rank_);
  REAL(MPI_Comm_size)(comm, &s->size_);
  s->scratch_ = (scratch + 63) / 64 * 64;
  s->bytes_ = static_cast<size_t>(s->size_) * s->area_bytes();
  auto base = map_node_shared(comm, s->bytes_);
  if (!base) return base.error();
  if (!base.value()) return std::unique_ptr<NodeSegment>();
  s->base_ = base.value();
  return s;
}

NodeSegment::~NodeSegment() {
  if (base_) munmap(base_, bytes_);
}

}  // namespace dtmpi::transport
