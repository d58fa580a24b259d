// All-to-all collectives and their neighborhood forms, blocking and
// non-blocking, through the staging path (interpose/coll_staging.hpp) when a
// buffer is one the system MPI cannot take. One implementation per
// collective; `req` null selects the blocking form.
#include "coll/coll.hpp"
#include "interpose/coll_p2p.hpp"
#include "interpose/coll_staging.hpp"
#include "interpose/export.hpp"
#include "base/system_mpi.hpp"
#include "transport/engine.hpp"

namespace tp = dtmpi::transport;
using namespace dtmpi::interpose;

namespace {

dtmpi::Status alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                       MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kAlltoall, uniform_side(sb, n, sc, st), uniform_side(rb, n, rc, rt),
                        sb == MPI_IN_PLACE ? InPlace::all() : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rt);
                          // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                          auto served = dtmpi::coll::alltoall(a.buf, a.count, a.type, b.buf, b.count, b.type, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Ialltoall)(a.buf, a.count, a.type, b.buf, b.count, b.type, comm, q)
                                   : REAL(MPI_Alltoall)(a.buf, a.count, a.type, b.buf, b.count, b.type, comm);
                        });
}

dtmpi::Status alltoallv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, const int* rc,
                        const int* rd, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  if (P2pRoute route; p2p_route_everyone(comm, sb, req, route))
    return exchange_p2p(v_side(sb, n, sc, sd, st), v_side(rb, n, rc, rd, rt), route, comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kAlltoallv, v_side(sb, n, sc, sd, st), v_side(rb, n, rc, rd, rt),
                        sb == MPI_IN_PLACE ? InPlace::all() : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, sd, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          auto served = dtmpi::coll::alltoallv(a.buf, a.counts, a.displs, a.type, b.buf, b.counts,
                                                               b.displs, b.type, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Ialltoallv)(a.buf, a.counts, a.displs, a.type,
                                                          b.buf, b.counts, b.displs, b.type, comm, q)
                                   : REAL(MPI_Alltoallv)(a.buf, a.counts, a.displs, a.type,
                                                         b.buf, b.counts, b.displs, b.type, comm);
                        });
}

dtmpi::Status alltoallw(const void* sb, const int* sc, const int* sd, const MPI_Datatype* st, void* rb, const int* rc,
                        const int* rd, const MPI_Datatype* rt, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  if (P2pRoute route; p2p_route_everyone(comm, sb, req, route))
    return exchange_p2p(w_side(sb, n, sc, sd, st), w_side(rb, n, rc, rd, rt), route, comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kAlltoallv, w_side(sb, n, sc, sd, st), w_side(rb, n, rc, rd, rt),
                        sb == MPI_IN_PLACE ? InPlace::all() : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, sd, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          auto served = dtmpi::coll::alltoallw(a.buf, a.counts, a.displs, a.types, b.buf, b.counts,
                                                               b.displs, b.types, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Ialltoallw)(a.buf, a.counts, a.displs, a.types,
                                                          b.buf, b.counts, b.displs, b.types, comm, q)
                                   : REAL(MPI_Alltoallw)(a.buf, a.counts, a.displs, a.types,
                                                         b.buf, b.counts, b.displs, b.types, comm);
                        });
}

dtmpi::Status neighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  int in = 0, out = 0;
  const bool topo = neighbor_counts(comm, in, out);
  if (P2pRoute route; topo && p2p_route_neighbors(comm, req, route))
    return exchange_p2p(uniform_side(sb, out, sc, st), uniform_side(rb, in, rc, rt), route, comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kCount, topo ? uniform_side(sb, out, sc, st) : no_pieces(),
                        topo ? uniform_side(rb, in, rc, rt) : no_pieces(), InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rt);
                          return q ? REAL(MPI_Ineighbor_alltoall)(a.buf, a.count, a.type,
                                                                  b.buf, b.count, b.type, comm, q)
                                   : REAL(MPI_Neighbor_alltoall)(a.buf, a.count, a.type, b.buf, b.count, b.type, comm);
                        });
}

dtmpi::Status neighbor_alltoallv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, const int* rc,
                                 const int* rd, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  int in = 0, out = 0;
  const bool topo = neighbor_counts(comm, in, out);
  if (P2pRoute route; topo && p2p_route_neighbors(comm, req, route))
    return exchange_p2p(v_side(sb, out, sc, sd, st), v_side(rb, in, rc, rd, rt), route, comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kCount, topo ? v_side(sb, out, sc, sd, st) : no_pieces(),
                        topo ? v_side(rb, in, rc, rd, rt) : no_pieces(), InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, sd, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          return q ? REAL(MPI_Ineighbor_alltoallv)(a.buf, a.counts, a.displs, a.type,
                                                                   b.buf, b.counts, b.displs, b.type, comm, q)
                                   : REAL(MPI_Neighbor_alltoallv)(a.buf, a.counts, a.displs, a.type,
                                                                  b.buf, b.counts, b.displs, b.type, comm);
                        });
}

dtmpi::Status neighbor_alltoallw(const void* sb, const int* sc, const MPI_Aint* sd, const MPI_Datatype* st, void* rb,
                                 const int* rc, const MPI_Aint* rd, const MPI_Datatype* rt, MPI_Comm comm,
                                 MPI_Request* req) {
  tp::poll();
  int in = 0, out = 0;
  const bool topo = neighbor_counts(comm, in, out);
  if (P2pRoute route; topo && p2p_route_neighbors(comm, req, route))
    return exchange_p2p(w_side(sb, out, sc, sd, st), w_side(rb, in, rc, rd, rt), route, comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kCount, topo ? w_side(sb, out, sc, sd, st) : no_pieces(),
                        topo ? w_side(rb, in, rc, rd, rt) : no_pieces(), InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, sd, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          return q ? REAL(MPI_Ineighbor_alltoallw)(a.buf, a.counts, a.displs, a.types,
                                                                   b.buf, b.counts, b.displs, b.types, comm, q)
                                   : REAL(MPI_Neighbor_alltoallw)(a.buf, a.counts, a.displs, a.types,
                                                                  b.buf, b.counts, b.displs, b.types, comm);
                        });
}

}  // namespace

DTMPI_EXPORT int MPI_Alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                              MPI_Comm comm) {
  return result(comm, alltoall(sb, sc, st, rb, rc, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ialltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                               MPI_Comm comm, MPI_Request* req) {
  return result(comm, alltoall(sb, sc, st, rb, rc, rt, comm, req));
}
DTMPI_EXPORT int MPI_Alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                               const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return result(comm, alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ialltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  return result(comm, alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, req));
}
DTMPI_EXPORT int MPI_Alltoallw(const void* sb, const int sc[], const int sd[], const MPI_Datatype st[], void* rb,
                               const int rc[], const int rd[], const MPI_Datatype rt[], MPI_Comm comm) {
  return result(comm, alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ialltoallw(const void* sb, const int sc[], const int sd[], const MPI_Datatype st[], void* rb,
                                const int rc[], const int rd[], const MPI_Datatype rt[], MPI_Comm comm,
                                MPI_Request* req) {
  return result(comm, alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, req));
}
DTMPI_EXPORT int MPI_Neighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                       MPI_Comm comm) {
  return result(comm, neighbor_alltoall(sb, sc, st, rb, rc, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ineighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                        MPI_Comm comm, MPI_Request* req) {
  return result(comm, neighbor_alltoall(sb, sc, st, rb, rc, rt, comm, req));
}
DTMPI_EXPORT int MPI_Neighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                        const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return result(comm, neighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ineighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                         const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm,
                                         MPI_Request* req) {
  return result(comm, neighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, req));
}
DTMPI_EXPORT int MPI_Neighbor_alltoallw(const void* sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[],
                                        void* rb, const int rc[], const MPI_Aint rd[], const MPI_Datatype rt[],
                                        MPI_Comm comm) {
  return result(comm, neighbor_alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ineighbor_alltoallw(const void* sb, const int sc[], const MPI_Aint sd[], const MPI_Datatype st[],
                                         void* rb, const int rc[], const MPI_Aint rd[], const MPI_Datatype rt[],
                                         MPI_Comm comm, MPI_Request* req) {
  return result(comm, neighbor_alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm, req));
}
