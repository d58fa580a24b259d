// Collectives on buffers the system MPI cannot take as they are (GPU memory;
// derived types in the host test mode): MPI_Alltoallv, MPI_Alltoallw and
// their neighborhood forms. Every outgoing piece is packed into one host
// staging buffer, the system MPI exchanges packed bytes, every incoming piece
// is unpacked. Zero counts cost nothing. Buffers it can take go straight to it.
// The v forms are the w forms with one type and displacements in extents.
#include <vector>

#include "base/log.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/gpu.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/stats.hpp"
#include "transport/engine.hpp"
#include "type/registry.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::must_stage;
using dtmpi::interpose::raise;

namespace {

// One side of a collective: n pieces of `buf`, piece i being counts[i]
// elements of types[i] at byte displacement displs[i].
struct Pieces {
  const void* buf = nullptr;
  int n = 0;
  const int* counts = nullptr;
  std::vector<int64_t> displs;
  std::vector<MPI_Datatype> types;
};

Pieces v_side(const void* buf, int n, const int* counts, const int* displs, MPI_Datatype type) {
  Pieces p{buf, n, counts, std::vector<int64_t>(static_cast<size_t>(n)), std::vector<MPI_Datatype>(static_cast<size_t>(n), type)};
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  for (int i = 0; i < n; ++i) p.displs[static_cast<size_t>(i)] = int64_t{displs[i]} * extent;
  return p;
}

template <class Displ>
Pieces w_side(const void* buf, int n, const int* counts, const Displ* displs, const MPI_Datatype* types) {
  return Pieces{buf, n, counts, std::vector<int64_t>(displs, displs + n), std::vector<MPI_Datatype>(types, types + n)};
}

// A staged side: the packed pieces back to back in one host buffer.
struct Staged {
  std::vector<dtmpi::type::PlanPtr> plans;
  rt::PointerInfo info;
  rt::Staging staging;
  std::vector<int> counts, displs;  // bytes
  std::vector<MPI_Datatype> bytes;  // MPI_BYTE per piece (the w forms' type array)
  ~Staged() { rt::release_staging(staging); }
};

// Whether `p` must be staged; fills plans and memory. Each distinct type is
// asked once (a v side asks once).
bool needs_staging(const Pieces& p, Staged& s) {
  if (p.buf == MPI_IN_PLACE) return false;
  bool stage = false;
  MPI_Datatype asked = MPI_DATATYPE_NULL;
  for (int i = 0; i < p.n && !stage; ++i) {
    const MPI_Datatype t = p.types[static_cast<size_t>(i)];
    if (p.counts[i] <= 0 || t == asked) continue;
    asked = t;
    tp::UserBuffer b;
    if (must_stage(static_cast<const char*>(p.buf) + p.displs[static_cast<size_t>(i)], p.counts[i], t, b)) {
      stage = true;
      s.info = b.info;
    }
  }
  if (!stage) return false;
  s.plans.resize(static_cast<size_t>(p.n));
  for (int i = 0; i < p.n; ++i) {
    if (p.counts[i] <= 0) continue;
    s.plans[static_cast<size_t>(i)] = dtmpi::type::plan_for(p.types[static_cast<size_t>(i)]);
    if (!s.plans[static_cast<size_t>(i)]) return false;  // a type dtmpi cannot plan: the system MPI takes it all
  }
  return true;
}

char* piece_of(const Pieces& p, int i) {
  return const_cast<char*>(static_cast<const char*>(p.buf)) + p.displs[static_cast<size_t>(i)];
}

// Lays the pieces out in one staging buffer (packing them there when `pack`).
int stage(const Pieces& p, bool pack, Staged& s) {
  s.counts.assign(static_cast<size_t>(p.n), 0);
  s.displs.assign(static_cast<size_t>(p.n), 0);
  s.bytes.assign(static_cast<size_t>(p.n), MPI_BYTE);
  int64_t total = 0;
  for (int i = 0; i < p.n; ++i) {
    s.displs[static_cast<size_t>(i)] = static_cast<int>(total);
    if (p.counts[i] <= 0) continue;
    s.counts[static_cast<size_t>(i)] = static_cast<int>(int64_t{p.counts[i]} * s.plans[static_cast<size_t>(i)]->size);
    total += s.counts[static_cast<size_t>(i)];
    if (total > INT32_MAX) return MPI_ERR_COUNT;
  }
  auto st = rt::acquire_staging(static_cast<size_t>(total));
  if (!st) return MPI_ERR_NO_MEM;
  s.staging = st.value();
  for (int i = 0; pack && i < p.n; ++i) {
    if (p.counts[i] <= 0) continue;
    rt::Staging piece = s.staging;
    piece.ptr = static_cast<char*>(s.staging.ptr) + s.displs[static_cast<size_t>(i)];
    if (!rt::stage_out(*s.plans[static_cast<size_t>(i)], p.counts[i], piece_of(p, i), s.info, piece, false))
      return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

int unstage(const Pieces& p, Staged& s) {
  for (int i = 0; i < p.n; ++i) {
    if (p.counts[i] <= 0) continue;
    rt::Staging piece = s.staging;
    piece.ptr = static_cast<char*>(s.staging.ptr) + s.displs[static_cast<size_t>(i)];
    if (!rt::stage_in(*s.plans[static_cast<size_t>(i)], p.counts[i], piece, piece_of(p, i), s.info, false))
      return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

// Stages what must be staged and runs `exchange(send staged or null, receive
// staged or null)`, which calls the system MPI with the staged layout for a
// staged side and the user's arguments for the other. `handled` false:
// nothing to stage, nothing done.
template <class Exchange>
int staged_collective(const Pieces& send, const Pieces& recv, MPI_Comm comm, bool& handled, Exchange exchange) {
  Staged ss, rs;
  const bool stage_s = needs_staging(send, ss);
  const bool stage_r = needs_staging(recv, rs);
  handled = stage_s || stage_r;
  if (!handled) return MPI_SUCCESS;
  rt::count(rt::Counter::kStagedCollectives);
  if (stage_s) {
    if (int rc = stage(send, true, ss); rc != MPI_SUCCESS) return raise(comm, rc);
  }
  if (stage_r) {
    if (int rc = stage(recv, false, rs); rc != MPI_SUCCESS) return raise(comm, rc);
  }
  int rc = exchange(stage_s ? &ss : nullptr, stage_r ? &rs : nullptr);
  if (rc == MPI_SUCCESS && stage_r) {
    rc = unstage(recv, rs);
    if (rc != MPI_SUCCESS) return raise(comm, rc);
  }
  return rc;
}

// Peers of a collective on `comm` (the remote group of an intercommunicator).
int peers_of(MPI_Comm comm) {
  int n = 0, inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &n);
  else
    PMPI_Comm_size(comm, &n);
  return n;
}

// In- and out-degree of a communicator with a topology (for the neighbor forms).
bool neighbor_counts(MPI_Comm comm, int& in, int& out) {
  int kind = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &kind);
  int weighted = 0;
  if (kind == MPI_DIST_GRAPH) return PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted) == MPI_SUCCESS;
  if (kind == MPI_CART) {
    int nd = 0;
    PMPI_Cartdim_get(comm, &nd);
    in = out = 2 * nd;
    return true;
  }
  if (kind == MPI_GRAPH) {
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    PMPI_Graph_neighbors_count(comm, me, &in);
    out = in;
    return true;
  }
  return false;
}

}  // namespace

DTMPI_EXPORT int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                               void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                               MPI_Comm comm) {
  tp::poll();
  const int n = peers_of(comm);
  bool handled = false;
  int rc = staged_collective(
      v_side(sendbuf, n, sendcounts, sdispls, sendtype), v_side(recvbuf, n, recvcounts, rdispls, recvtype), comm,
      handled, [&](Staged* s, Staged* r) {
        return REAL(MPI_Alltoallv)(s ? s->staging.ptr : sendbuf, s ? s->counts.data() : sendcounts,
                                   s ? s->displs.data() : sdispls, s ? MPI_BYTE : sendtype, r ? r->staging.ptr : recvbuf,
                                   r ? r->counts.data() : recvcounts, r ? r->displs.data() : rdispls,
                                   r ? MPI_BYTE : recvtype, comm);
      });
  if (handled) return rc;
  return REAL(MPI_Alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

DTMPI_EXPORT int MPI_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  tp::poll();
  int in = 0, out = 0;
  if (neighbor_counts(comm, in, out)) {
    bool handled = false;
    int rc = staged_collective(
        v_side(sendbuf, out, sendcounts, sdispls, sendtype), v_side(recvbuf, in, recvcounts, rdispls, recvtype), comm,
        handled, [&](Staged* s, Staged* r) {
          return REAL(MPI_Neighbor_alltoallv)(s ? s->staging.ptr : sendbuf, s ? s->counts.data() : sendcounts,
                                              s ? s->displs.data() : sdispls, s ? MPI_BYTE : sendtype,
                                              r ? r->staging.ptr : recvbuf, r ? r->counts.data() : recvcounts,
                                              r ? r->displs.data() : rdispls, r ? MPI_BYTE : recvtype, comm);
        });
    if (handled) return rc;
  }
  return REAL(MPI_Neighbor_alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                      recvtype, comm);
}

DTMPI_EXPORT int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                               const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  tp::poll();
  const int n = peers_of(comm);
  bool handled = false;
  int rc = staged_collective(
      w_side(sendbuf, n, sendcounts, sdispls, sendtypes), w_side(recvbuf, n, recvcounts, rdispls, recvtypes), comm,
      handled, [&](Staged* s, Staged* r) {
        return REAL(MPI_Alltoallw)(s ? s->staging.ptr : sendbuf, s ? s->counts.data() : sendcounts,
                                   s ? s->displs.data() : sdispls, s ? s->bytes.data() : sendtypes,
                                   r ? r->staging.ptr : recvbuf, r ? r->counts.data() : recvcounts,
                                   r ? r->displs.data() : rdispls, r ? r->bytes.data() : recvtypes, comm);
      });
  if (handled) return rc;
  return REAL(MPI_Alltoallw)(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}

DTMPI_EXPORT int MPI_Neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  tp::poll();
  int in = 0, out = 0;
  if (neighbor_counts(comm, in, out)) {
    bool handled = false;
    int rc = staged_collective(
        w_side(sendbuf, out, sendcounts, sdispls, sendtypes), w_side(recvbuf, in, recvcounts, rdispls, recvtypes),
        comm, handled, [&](Staged* s, Staged* r) {
          // this form takes MPI_Aint byte displacements
          std::vector<MPI_Aint> sd, rd;
          if (s) sd.assign(s->displs.begin(), s->displs.end());
          if (r) rd.assign(r->displs.begin(), r->displs.end());
          return REAL(MPI_Neighbor_alltoallw)(s ? s->staging.ptr : sendbuf, s ? s->counts.data() : sendcounts,
                                              s ? sd.data() : sdispls, s ? s->bytes.data() : sendtypes,
                                              r ? r->staging.ptr : recvbuf, r ? r->counts.data() : recvcounts,
                                              r ? rd.data() : rdispls, r ? r->bytes.data() : recvtypes, comm);
        });
    if (handled) return rc;
  }
  return REAL(MPI_Neighbor_alltoallw)(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                      recvtypes, comm);
}
