// Gathers, scatters, broadcast and the neighbor allgathers, blocking and
// non-blocking, through the staging path (interpose/coll_staging.hpp) when a
// buffer is one the system MPI cannot take; in a job with GPUs the blocking
// neighbor allgathers go point to point (interpose/coll_p2p.hpp). Arguments MPI ignores on a rank
// (a non-root's receive buffer of a gather, ...) are never looked at.
#include "coll/coll.hpp"
#include "interpose/coll_p2p.hpp"
#include "interpose/coll_staging.hpp"
#include "interpose/export.hpp"
#include "base/system_mpi.hpp"
#include "transport/engine.hpp"

namespace tp = dtmpi::transport;
using namespace dtmpi::interpose;

namespace {

// A rooted collective's roles on this rank: intracommunicator (root is a
// rank) or intercommunicator (MPI_ROOT, MPI_PROC_NULL, or a remote rank).
struct Roles {
  bool root = false;    // collects (gather) / distributes (scatter, bcast)
  bool member = false;  // contributes (gather) / receives (scatter, bcast)
  int me = 0;
};
Roles roles_of(MPI_Comm comm, int root) {
  Roles r;
  int inter = 0;
  REAL(MPI_Comm_test_inter)(comm, &inter);
  REAL(MPI_Comm_rank)(comm, &r.me);
  if (inter) {
    r.root = root == MPI_ROOT;
    r.member = root >= 0;
  } else {
    r.root = root == r.me;
    r.member = true;
  }
  return r;
}

dtmpi::Status allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                        MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  return run_collective(comm, dtmpi::coll::CollOpKind::kAllgather, one_piece(sb, sc, st), uniform_side(rb, n, rc, rt),
                        sb == MPI_IN_PLACE ? InPlace::one(me) : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rt);
                          // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                          auto served = dtmpi::coll::allgather(a.buf, a.count, a.type, b.buf, b.count, b.type, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Iallgather)(a.buf, a.count, a.type, b.buf, b.count, b.type, comm, q)
                                   : REAL(MPI_Allgather)(a.buf, a.count, a.type, b.buf, b.count, b.type, comm);
                        });
}

dtmpi::Status allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                         MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const int n = peers_of(comm);
  int me = 0;
  REAL(MPI_Comm_rank)(comm, &me);
  return run_collective(comm, dtmpi::coll::CollOpKind::kAllgatherv, one_piece(sb, sc, st), v_side(rb, n, rc, rd, rt),
                        sb == MPI_IN_PLACE ? InPlace::one(me) : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                          auto served = dtmpi::coll::allgatherv(a.buf, a.count, a.type, b.buf, b.counts, b.displs,
                                                                b.type, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Iallgatherv)(a.buf, a.count, a.type,
                                                           b.buf, b.counts, b.displs, b.type, comm, q)
                                   : REAL(MPI_Allgatherv)(a.buf, a.count, a.type,
                                                          b.buf, b.counts, b.displs, b.type, comm);
                        });
}

dtmpi::Status neighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                 MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  int in = 0, out = 0;
  const bool topo = neighbor_counts(comm, in, out);
  if (P2pRoute route; topo && p2p_route_neighbors(comm, req, route))
    return exchange_p2p(one_piece(sb, sc, st), uniform_side(rb, in, rc, rt), route, comm, true);
  return run_collective(comm, dtmpi::coll::CollOpKind::kCount, topo ? one_piece(sb, sc, st) : no_pieces(), topo ? uniform_side(rb, in, rc, rt) : no_pieces(),
                        InPlace::none(), req, [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rt);
                          return q ? REAL(MPI_Ineighbor_allgather)(a.buf, a.count, a.type,
                                                                   b.buf, b.count, b.type, comm, q)
                                   : REAL(MPI_Neighbor_allgather)(a.buf, a.count, a.type, b.buf, b.count, b.type, comm);
                        });
}

dtmpi::Status neighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd,
                                  MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  int in = 0, out = 0;
  const bool topo = neighbor_counts(comm, in, out);
  if (P2pRoute route; topo && p2p_route_neighbors(comm, req, route))
    return exchange_p2p(one_piece(sb, sc, st), v_side(rb, in, rc, rd, rt), route, comm, true);
  return run_collective(comm, dtmpi::coll::CollOpKind::kCount, topo ? one_piece(sb, sc, st) : no_pieces(), topo ? v_side(rb, in, rc, rd, rt) : no_pieces(),
                        InPlace::none(), req, [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          return q ? REAL(MPI_Ineighbor_allgatherv)(a.buf, a.count, a.type,
                                                                    b.buf, b.counts, b.displs, b.type, comm, q)
                                   : REAL(MPI_Neighbor_allgatherv)(a.buf, a.count, a.type,
                                                                   b.buf, b.counts, b.displs, b.type, comm);
                        });
}

dtmpi::Status gather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                     MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const Roles ro = roles_of(comm, root);
  const int n = peers_of(comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kGather, ro.member ? one_piece(sb, sc, st) : no_pieces(),
                        ro.root ? uniform_side(rb, n, rc, rt) : no_pieces(),
                        ro.root && sb == MPI_IN_PLACE ? InPlace::one(ro.me) : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rt);
                          // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                          auto served = dtmpi::coll::gather(a.buf, a.count, a.type, b.buf, b.count, b.type, root, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Igather)(a.buf, a.count, a.type, b.buf, b.count, b.type, root, comm, q)
                                   : REAL(MPI_Gather)(a.buf, a.count, a.type, b.buf, b.count, b.type, root, comm);
                        });
}

dtmpi::Status gatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int* rc, const int* rd, MPI_Datatype rt,
                      int root, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const Roles ro = roles_of(comm, root);
  const int n = peers_of(comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kGatherv, ro.member ? one_piece(sb, sc, st) : no_pieces(),
                        ro.root ? v_side(rb, n, rc, rd, rt) : no_pieces(),
                        ro.root && sb == MPI_IN_PLACE ? InPlace::one(ro.me) : InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rd, rt);
                          auto served = dtmpi::coll::gatherv(a.buf, a.count, a.type, b.buf, b.counts, b.displs,
                                                             b.type, root, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Igatherv)(a.buf, a.count, a.type,
                                                        b.buf, b.counts, b.displs, b.type, root, comm, q)
                                   : REAL(MPI_Gatherv)(a.buf, a.count, a.type,
                                                       b.buf, b.counts, b.displs, b.type, root, comm);
                        });
}

dtmpi::Status scatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                      MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const Roles ro = roles_of(comm, root);
  const int n = peers_of(comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kScatter, ro.root ? uniform_side(sb, n, sc, st) : no_pieces(),
                        ro.member ? one_piece(rb, rc, rt) : no_pieces(), InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, st);
                          const auto b = args(r, rb, rc, rt);
                          // dtmpi's own algorithm where DTMPI_COLL selects one (src/coll)
                          auto served = dtmpi::coll::scatter(a.buf, a.count, a.type, b.buf, b.count, b.type, root, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Iscatter)(a.buf, a.count, a.type, b.buf, b.count, b.type, root, comm, q)
                                   : REAL(MPI_Scatter)(a.buf, a.count, a.type, b.buf, b.count, b.type, root, comm);
                        });
}

dtmpi::Status scatterv(const void* sb, const int* sc, const int* sd, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                       int root, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const Roles ro = roles_of(comm, root);
  const int n = peers_of(comm);
  return run_collective(comm, dtmpi::coll::CollOpKind::kScatterv, ro.root ? v_side(sb, n, sc, sd, st) : no_pieces(),
                        ro.member ? one_piece(rb, rc, rt) : no_pieces(), InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          const auto a = args(s, sb, sc, sd, st);
                          const auto b = args(r, rb, rc, rt);
                          auto served = dtmpi::coll::scatterv(a.buf, a.counts, a.displs, a.type, b.buf, b.count,
                                                              b.type, root, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Iscatterv)(a.buf, a.counts, a.displs, a.type,
                                                         b.buf, b.count, b.type, root, comm, q)
                                   : REAL(MPI_Scatterv)(a.buf, a.counts, a.displs, a.type,
                                                        b.buf, b.count, b.type, root, comm);
                        });
}

dtmpi::Status bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* req) {
  tp::poll();
  const Roles ro = roles_of(comm, root);
  const bool receives = ro.member && !ro.root;
  return run_collective(comm, dtmpi::coll::CollOpKind::kBcast, ro.root ? one_piece(buf, count, type) : no_pieces(),
                        receives ? one_piece(buf, count, type) : no_pieces(), InPlace::none(), req,
                        [&](Staged* s, Staged* r, MPI_Request* q) {
                          Staged* x = s ? s : r;
                          void* b = x ? x->ptr() : buf;
                          const int c = x ? x->count() : count;
                          const MPI_Datatype t = x ? x->type() : type;
                          // dtmpi's own algorithm where DTMPI_COLL selects one, on the
                          // staged bytes or the user's buffer alike (src/coll)
                          auto served = dtmpi::coll::bcast(b, c, t, root, comm, q);
                          if (!served) return served.error().code;
                          if (served.value()) return MPI_SUCCESS;
                          return q ? REAL(MPI_Ibcast)(b, c, t, root, comm, q) : REAL(MPI_Bcast)(b, c, t, root, comm);
                        });
}

}  // namespace

DTMPI_EXPORT int MPI_Allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                               MPI_Comm comm) {
  return result(comm, allgather(sb, sc, st, rb, rc, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iallgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                MPI_Comm comm, MPI_Request* req) {
  return result(comm, allgather(sb, sc, st, rb, rc, rt, comm, req));
}
DTMPI_EXPORT int MPI_Allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[], const int rd[],
                                MPI_Datatype rt, MPI_Comm comm) {
  return result(comm, allgatherv(sb, sc, st, rb, rc, rd, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iallgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[], const int rd[],
                                 MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  return result(comm, allgatherv(sb, sc, st, rb, rc, rd, rt, comm, req));
}
DTMPI_EXPORT int MPI_Neighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                        MPI_Comm comm) {
  return result(comm, neighbor_allgather(sb, sc, st, rb, rc, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ineighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc,
                                         MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  return result(comm, neighbor_allgather(sb, sc, st, rb, rc, rt, comm, req));
}
DTMPI_EXPORT int MPI_Neighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[],
                                         const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return result(comm, neighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ineighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[],
                                          const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  return result(comm, neighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm, req));
}
DTMPI_EXPORT int MPI_Gather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                            MPI_Comm comm) {
  return result(comm, gather(sb, sc, st, rb, rc, rt, root, comm, nullptr));
}
DTMPI_EXPORT int MPI_Igather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                             MPI_Comm comm, MPI_Request* req) {
  return result(comm, gather(sb, sc, st, rb, rc, rt, root, comm, req));
}
DTMPI_EXPORT int MPI_Gatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[], const int rd[],
                             MPI_Datatype rt, int root, MPI_Comm comm) {
  return result(comm, gatherv(sb, sc, st, rb, rc, rd, rt, root, comm, nullptr));
}
DTMPI_EXPORT int MPI_Igatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[], const int rd[],
                              MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req) {
  return result(comm, gatherv(sb, sc, st, rb, rc, rd, rt, root, comm, req));
}
DTMPI_EXPORT int MPI_Scatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                             MPI_Comm comm) {
  return result(comm, scatter(sb, sc, st, rb, rc, rt, root, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iscatter(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt, int root,
                              MPI_Comm comm, MPI_Request* req) {
  return result(comm, scatter(sb, sc, st, rb, rc, rt, root, comm, req));
}
DTMPI_EXPORT int MPI_Scatterv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb, int rc,
                              MPI_Datatype rt, int root, MPI_Comm comm) {
  return result(comm, scatterv(sb, sc, sd, st, rb, rc, rt, root, comm, nullptr));
}
DTMPI_EXPORT int MPI_Iscatterv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb, int rc,
                               MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request* req) {
  return result(comm, scatterv(sb, sc, sd, st, rb, rc, rt, root, comm, req));
}
DTMPI_EXPORT int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return result(comm, bcast(buf, count, type, root, comm, nullptr));
}
DTMPI_EXPORT int MPI_Ibcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* req) {
  return result(comm, bcast(buf, count, type, root, comm, req));
}
