// Collectives on buffers the system MPI cannot take as they are (GPU memory;
// derived types in the host test mode): MPI_Alltoallv, MPI_Alltoallw and
// their neighborhood forms. Every outgoing piece is packed into one host
// staging buffer, the system MPI exchanges packed bytes, every incoming piece
// is unpacked. Zero counts cost nothing. Buffers it can take go straight to it.
#include <vector>

#include "base/log.hpp"
#include "interpose/export.hpp"
#include "interpose/p2p_route.hpp"
#include "runtime/gpu.hpp"
#include "runtime/real_mpi.hpp"
#include "runtime/stats.hpp"
#include "type/registry.hpp"
#include "transport/engine.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;
using dtmpi::interpose::must_stage;
using dtmpi::interpose::raise;

namespace {

// One side of a v-collective: n pieces (count, displacement in elements of `type`).
struct Side {
  const void* buf;
  const int* counts;
  const int* displs;
  MPI_Datatype type;
  int n;
};

// Whether any piece of `s` must be staged; fills the plan and memory info.
bool side_needs_staging(const Side& s, tp::UserBuffer& b) {
  for (int i = 0; i < s.n; ++i)
    if (s.counts[i] > 0) return must_stage(s.buf, s.counts[i], s.type, b);
  return false;
}

struct Packed {
  rt::Staging staging;
  std::vector<int> counts, displs;  // bytes
  ~Packed() { rt::release_staging(staging); }
};

// Lays the pieces of `s` out back to back in one staging buffer (packing
// them there when `pack`).
int stage_side(const Side& s, const tp::UserBuffer& b, bool pack, Packed& p) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(s.type, &lb, &extent);
  p.counts.resize(static_cast<size_t>(s.n));
  p.displs.resize(static_cast<size_t>(s.n));
  int64_t total = 0;
  for (int i = 0; i < s.n; ++i) {
    p.displs[static_cast<size_t>(i)] = static_cast<int>(total);
    p.counts[static_cast<size_t>(i)] = static_cast<int>(int64_t{s.counts[i]} * b.plan->size);
    total += int64_t{s.counts[i]} * b.plan->size;
  }
  if (total > INT32_MAX) return MPI_ERR_COUNT;
  auto st = rt::acquire_staging(static_cast<size_t>(total));
  if (!st) return MPI_ERR_NO_MEM;
  p.staging = st.value();
  if (!pack) return MPI_SUCCESS;
  for (int i = 0; i < s.n; ++i) {
    if (s.counts[i] <= 0) continue;
    rt::Staging piece = p.staging;
    piece.ptr = static_cast<char*>(p.staging.ptr) + p.displs[static_cast<size_t>(i)];
    auto ok = rt::stage_out(*b.plan, s.counts[i], static_cast<const char*>(s.buf) + int64_t{s.displs[i]} * extent,
                            b.info, piece, false);
    if (!ok) return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

int unstage_side(const Side& s, const tp::UserBuffer& b, Packed& p) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(s.type, &lb, &extent);
  for (int i = 0; i < s.n; ++i) {
    if (s.counts[i] <= 0) continue;
    rt::Staging piece = p.staging;
    piece.ptr = static_cast<char*>(p.staging.ptr) + p.displs[static_cast<size_t>(i)];
    auto ok = rt::stage_in(*b.plan, s.counts[i], piece,
                           const_cast<char*>(static_cast<const char*>(s.buf)) + int64_t{s.displs[i]} * extent,
                           b.info, false);
    if (!ok) return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

using VFn = int (*)(const void*, const int[], const int[], MPI_Datatype, void*, const int[], const int[],
                    MPI_Datatype, MPI_Comm);

// Either side staged (the other as it is when the system MPI can take it).
int staged_v(VFn fn, const Side& s, const Side& r, MPI_Comm comm, bool& handled) {
  tp::UserBuffer sb, rb;
  const bool ss = s.buf != MPI_IN_PLACE && side_needs_staging(s, sb);
  const bool rs = side_needs_staging(r, rb);
  handled = ss || rs;
  if (!handled) return MPI_SUCCESS;
  rt::count(rt::Counter::kStagedCollectives);
  Packed ps, pr;
  if (ss) {
    if (int rc = stage_side(s, sb, true, ps); rc != MPI_SUCCESS) return raise(comm, rc);
  }
  if (rs) {
    if (int rc = stage_side(r, rb, false, pr); rc != MPI_SUCCESS) return raise(comm, rc);
  }
  int rc = fn(ss ? ps.staging.ptr : s.buf, ss ? ps.counts.data() : s.counts, ss ? ps.displs.data() : s.displs,
              ss ? MPI_BYTE : s.type, rs ? pr.staging.ptr : const_cast<void*>(r.buf), rs ? pr.counts.data() : r.counts,
              rs ? pr.displs.data() : r.displs, rs ? MPI_BYTE : r.type, comm);
  if (rc == MPI_SUCCESS && rs) {
    rc = unstage_side(r, rb, pr);
    if (rc != MPI_SUCCESS) return raise(comm, rc);
  }
  return rc;
}

// One side of a w-collective: n pieces (count, byte displacement, own type).
struct SideW {
  const void* buf;
  const int* counts;
  const int* displs;  // bytes
  const MPI_Datatype* types;
  int n;
};

// The pieces of `s` with their plans, if any piece must be staged.
bool w_needs_staging(const SideW& s, std::vector<dtmpi::type::PlanPtr>& plans, rt::PointerInfo& info) {
  if (s.buf == MPI_IN_PLACE) return false;
  bool stage = false;
  for (int i = 0; i < s.n && !stage; ++i) {
    tp::UserBuffer b;
    if (s.counts[i] > 0 && must_stage(static_cast<const char*>(s.buf) + s.displs[i], s.counts[i], s.types[i], b)) {
      stage = true;
      info = b.info;
    }
  }
  if (!stage) return false;
  plans.resize(static_cast<size_t>(s.n));
  for (int i = 0; i < s.n; ++i) {
    if (s.counts[i] <= 0) continue;
    plans[static_cast<size_t>(i)] = dtmpi::type::plan_for(s.types[i]);
    if (!plans[static_cast<size_t>(i)]) return false;  // a type dtmpi cannot plan: the system MPI takes it all
  }
  return true;
}

int stage_w(const SideW& s, const std::vector<dtmpi::type::PlanPtr>& plans, const rt::PointerInfo& info, bool pack,
            Packed& p) {
  p.counts.assign(static_cast<size_t>(s.n), 0);
  p.displs.assign(static_cast<size_t>(s.n), 0);
  int64_t total = 0;
  for (int i = 0; i < s.n; ++i) {
    p.displs[static_cast<size_t>(i)] = static_cast<int>(total);
    if (s.counts[i] <= 0) continue;
    p.counts[static_cast<size_t>(i)] = static_cast<int>(int64_t{s.counts[i]} * plans[static_cast<size_t>(i)]->size);
    total += p.counts[static_cast<size_t>(i)];
  }
  if (total > INT32_MAX) return MPI_ERR_COUNT;
  auto st = rt::acquire_staging(static_cast<size_t>(total));
  if (!st) return MPI_ERR_NO_MEM;
  p.staging = st.value();
  for (int i = 0; pack && i < s.n; ++i) {
    if (s.counts[i] <= 0) continue;
    rt::Staging piece = p.staging;
    piece.ptr = static_cast<char*>(p.staging.ptr) + p.displs[static_cast<size_t>(i)];
    if (!rt::stage_out(*plans[static_cast<size_t>(i)], s.counts[i], static_cast<const char*>(s.buf) + s.displs[i],
                       info, piece, false))
      return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

int unstage_w(const SideW& s, const std::vector<dtmpi::type::PlanPtr>& plans, const rt::PointerInfo& info,
              Packed& p) {
  for (int i = 0; i < s.n; ++i) {
    if (s.counts[i] <= 0) continue;
    rt::Staging piece = p.staging;
    piece.ptr = static_cast<char*>(p.staging.ptr) + p.displs[static_cast<size_t>(i)];
    if (!rt::stage_in(*plans[static_cast<size_t>(i)], s.counts[i], piece,
                      const_cast<char*>(static_cast<const char*>(s.buf)) + s.displs[i], info, false))
      return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

using WFn = int (*)(const void*, const int[], const int[], const MPI_Datatype[], void*, const int[], const int[],
                    const MPI_Datatype[], MPI_Comm);

int staged_w(WFn fn, const SideW& s, const SideW& r, MPI_Comm comm, bool& handled) {
  std::vector<dtmpi::type::PlanPtr> splans, rplans;
  rt::PointerInfo sinfo, rinfo;
  const bool ss = w_needs_staging(s, splans, sinfo);
  const bool rs = w_needs_staging(r, rplans, rinfo);
  handled = ss || rs;
  if (!handled) return MPI_SUCCESS;
  rt::count(rt::Counter::kStagedCollectives);
  Packed ps, pr;
  if (ss) {
    if (int rc = stage_w(s, splans, sinfo, true, ps); rc != MPI_SUCCESS) return raise(comm, rc);
  }
  if (rs) {
    if (int rc = stage_w(r, rplans, rinfo, false, pr); rc != MPI_SUCCESS) return raise(comm, rc);
  }
  std::vector<MPI_Datatype> sbytes(static_cast<size_t>(s.n), MPI_BYTE), rbytes(static_cast<size_t>(r.n), MPI_BYTE);
  int rc = fn(ss ? ps.staging.ptr : s.buf, ss ? ps.counts.data() : s.counts, ss ? ps.displs.data() : s.displs,
              ss ? sbytes.data() : s.types, rs ? pr.staging.ptr : const_cast<void*>(r.buf),
              rs ? pr.counts.data() : r.counts, rs ? pr.displs.data() : r.displs, rs ? rbytes.data() : r.types, comm);
  if (rc == MPI_SUCCESS && rs) {
    rc = unstage_w(r, rplans, rinfo, pr);
    if (rc != MPI_SUCCESS) return raise(comm, rc);
  }
  return rc;
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
  int n = 0, inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &n);
  else
    PMPI_Comm_size(comm, &n);
  bool handled = false;
  int rc = staged_v(REAL(MPI_Alltoallv), Side{sendbuf, sendcounts, sdispls, sendtype, n},
                    Side{recvbuf, recvcounts, rdispls, recvtype, n}, comm, handled);
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
    int rc = staged_v(REAL(MPI_Neighbor_alltoallv), Side{sendbuf, sendcounts, sdispls, sendtype, out},
                      Side{recvbuf, recvcounts, rdispls, recvtype, in}, comm, handled);
    if (handled) return rc;
  }
  return REAL(MPI_Neighbor_alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                      recvtype, comm);
}

DTMPI_EXPORT int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                               const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  tp::poll();
  int n = 0, inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &n);
  else
    PMPI_Comm_size(comm, &n);
  bool handled = false;
  int rc = staged_w(REAL(MPI_Alltoallw), SideW{sendbuf, sendcounts, sdispls, sendtypes, n},
                    SideW{recvbuf, recvcounts, rdispls, recvtypes, n}, comm, handled);
  if (handled) return rc;
  return REAL(MPI_Alltoallw)(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}

DTMPI_EXPORT int MPI_Neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  tp::poll();
  int in = 0, out = 0;
  if (neighbor_counts(comm, in, out)) {
    // byte displacements as int for the shared path (the staged buffer is < 2 GiB)
    std::vector<int> sd(static_cast<size_t>(out)), rd(static_cast<size_t>(in));
    bool fits = true;
    for (int i = 0; i < out; ++i) {
      fits = fits && sdispls[i] >= 0 && sdispls[i] <= INT32_MAX;
      sd[static_cast<size_t>(i)] = static_cast<int>(sdispls[i]);
    }
    for (int i = 0; i < in; ++i) {
      fits = fits && rdispls[i] >= 0 && rdispls[i] <= INT32_MAX;
      rd[static_cast<size_t>(i)] = static_cast<int>(rdispls[i]);
    }
    if (fits) {
      struct Call {
        static int neighbor(const void* sb, const int sc[], const int sdi[], const MPI_Datatype st[], void* rb,
                            const int rc[], const int rdi[], const MPI_Datatype rt[], MPI_Comm c) {
          int i_in = 0, i_out = 0;
          neighbor_counts(c, i_in, i_out);
          std::vector<MPI_Aint> a(sdi, sdi + i_out), b(rdi, rdi + i_in);
          return REAL(MPI_Neighbor_alltoallw)(sb, sc, a.data(), st, rb, rc, b.data(), rt, c);
        }
      };
      bool handled = false;
      int rc = staged_w(&Call::neighbor, SideW{sendbuf, sendcounts, sd.data(), sendtypes, out},
                        SideW{recvbuf, recvcounts, rd.data(), recvtypes, in}, comm, handled);
      if (handled) return rc;
    }
  }
  return REAL(MPI_Neighbor_alltoallw)(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                                      recvtypes, comm);
}
