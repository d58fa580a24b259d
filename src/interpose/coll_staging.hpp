// The staging path shared by every collective on buffers the system MPI
// cannot take as they are (GPU memory; derived types in the host test mode).
// A collective is two sides, each a list of pieces (count, type, byte
// displacement in one buffer). A side that must be staged is packed -- all its
// pieces with one batched GPU launch -- into one host buffer, back to back;
// the system MPI moves those bytes as MPI_BYTE; the receiving side is unpacked
// the same way. A side the system MPI can take is passed as the user gave it.
// Blocking and non-blocking forms share one implementation per collective:
// the non-blocking one unpacks when the application's request completes.
#pragma once
#include <mpi.h>

#include "coll/coll.hpp"

#include <cstdint>
#include <memory>
#include <vector>

#include "interpose/entries.hpp"
#include "interpose/p2p_route.hpp"
#include "pack/pieces.hpp"
#include "runtime/buffers.hpp"
#include "transport/ledger.hpp"
#include "runtime/stats.hpp"
#include "type/registry.hpp"

namespace dtmpi::interpose {

// One side of a collective (MPI_IN_PLACE: no pieces): piece i is counts[i] elements of types[i] at byte
// displacement displs[i] of `buf`.
struct Pieces {
  const void* buf = nullptr;
  std::vector<int> counts;
  std::vector<int64_t> displs;
  std::vector<MPI_Datatype> types;
  int size() const { return static_cast<int>(counts.size()); }
  // where piece i starts (MPI's element 0 of it)
  char* piece(int i) const {
    return const_cast<char*>(static_cast<const char*>(buf)) + displs[static_cast<size_t>(i)];
  }
};

// n pieces of `count` elements each, back to back (alltoall, allgather, ...).
Pieces uniform_side(const void* buf, int n, int count, MPI_Datatype type);
// counts[i] elements at displs[i] extents (the v forms).
Pieces v_side(const void* buf, int n, const int* counts, const int* displs, MPI_Datatype type);
// counts[i] elements of types[i] at displs[i] bytes (the w forms).
template <class Displ>
Pieces w_side(const void* buf, int n, const int* counts, const Displ* displs, const MPI_Datatype* types) {
  if (buf == MPI_IN_PLACE) return Pieces{buf, {}, {}, {}};
  return Pieces{buf, std::vector<int>(counts, counts + n), std::vector<int64_t>(displs, displs + n),
                std::vector<MPI_Datatype>(types, types + n)};
}
inline Pieces one_piece(const void* buf, int count, MPI_Datatype type) { return uniform_side(buf, 1, count, type); }
inline Pieces no_pieces() { return Pieces{}; }

// A staged side: its pieces packed back to back in one host buffer. The
// system MPI sees each piece as the user's count of a contiguous type of the
// user type's size (not as bytes): algorithms that split messages into
// segments of whole elements then split both ends alike when only one end
// is staged.
struct Staged {
  std::vector<type::PlanPtr> plans;
  std::vector<runtime::PointerInfo> infos;  // per piece when the side spans several memories
  runtime::PointerInfo info;
  runtime::Staging staging;
  std::vector<int> counts;          // elements per piece (the user's counts)
  std::vector<int> displs;          // in elements of the piece's packed type (the v forms)
  std::vector<int> byte_displs;     // in bytes (the w forms)
  std::vector<MPI_Datatype> types;  // per piece: contiguous bytes of the user type's size
  std::vector<MPI_Aint> aint_displs;
  int64_t total = 0;
  // GPU memory neither dtmpi nor the system MPI can take (an MPI error
  // class, UserBuffer::refused): the call fails with it
  int refused = 0;
  Staged() = default;
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  ~Staged() { runtime::release_staging(staging); }
  void* ptr() const { return staging.ptr; }
  // The uniform and v forms (one type per side): the count of piece 0 and
  // the side's packed type.
  int count() const { return counts.empty() ? 0 : counts[0]; }
  MPI_Datatype type() const;
  const MPI_Aint* aint() {  // byte displacements as MPI_Aint (Neighbor_alltoallw)
    aint_displs.assign(byte_displs.begin(), byte_displs.end());
    return aint_displs.data();
  }
};

// The arguments the system MPI gets for one side: the staged layout where the
// side is staged (`s` not null), else the user's own. Uniform forms (one
// count), v forms (counts, displacements in elements), w forms (byte
// displacements, a type per piece; int or MPI_Aint displacements).
struct UniformArgs {
  void* buf;
  int count;
  MPI_Datatype type;
};
inline UniformArgs args(Staged* s, const void* buf, int count, MPI_Datatype type) {
  return s ? UniformArgs{s->ptr(), s->count(), s->type()} : UniformArgs{const_cast<void*>(buf), count, type};
}
struct VArgs {
  void* buf;
  const int* counts;
  const int* displs;
  MPI_Datatype type;
};
inline VArgs args(Staged* s, const void* buf, const int* counts, const int* displs, MPI_Datatype type) {
  return s ? VArgs{s->ptr(), s->counts.data(), s->displs.data(), s->type()}
           : VArgs{const_cast<void*>(buf), counts, displs, type};
}
template <class Displ>
struct WArgs {
  void* buf;
  const int* counts;
  const Displ* displs;
  const MPI_Datatype* types;
};
inline WArgs<int> args(Staged* s, const void* buf, const int* counts, const int* displs, const MPI_Datatype* types) {
  return s ? WArgs<int>{s->ptr(), s->counts.data(), s->byte_displs.data(), s->types.data()}
           : WArgs<int>{const_cast<void*>(buf), counts, displs, types};
}
inline WArgs<MPI_Aint> args(Staged* s, const void* buf, const int* counts, const MPI_Aint* displs,
                            const MPI_Datatype* types) {
  return s ? WArgs<MPI_Aint>{s->ptr(), s->counts.data(), s->aint(), s->types.data()}
           : WArgs<MPI_Aint>{const_cast<void*>(buf), counts, displs, types};
}

// Which pieces of the receiving side hold input already (MPI_IN_PLACE):
// they are packed into the staging buffer before the exchange.
struct InPlace {
  enum Kind { kNone, kAll, kOne } kind = kNone;
  int piece = -1;
  static InPlace none() { return {}; }
  static InPlace all() { return {kAll, -1}; }
  static InPlace one(int i) { return {kOne, i}; }
};

// A collective in flight: both sides and their staging; finish() unpacks.
struct StagedCall final : transport::Completion {
  Pieces send, recv;
  bool device_taken = false;  // collective_takes_device_memory(the call's op)
  Staged ss, rs;
  bool stage_send = false, stage_recv = false;
  Status finish() override;
};

// Whether a collective `op`'s buffers may reach their consumer in device
// memory: only where the system MPI is CUDA-aware and DTMPI_COLL cannot let
// dtmpi's own algorithms serve `op` (coll::enabled(op); kCount: operations
// they never serve, e.g. the neighborhood forms). Those algorithms copy with
// the CPU through a node segment, so where they may serve `op`, every rank
// stages its device buffers to host memory, whichever algorithm a call then
// gets -- the same rule on every rank (a device buffer on one rank must not
// send that rank to the system MPI while the others run dtmpi's algorithm).
bool collective_takes_device_memory(coll::CollOpKind op);

// Whether side `p` must be staged (GPU memory, a derived type in the host
// test mode, or, with `host` kWhereBetter, a small-block host type dtmpi
// packs better); fills the plans and where the pieces live. False also for a
// type dtmpi cannot plan.
bool needs_staging(const Pieces& p, Staged& s, HostPacking host = HostPacking::kWhereBetter,
                   bool device_taken = transport::mpi_takes_device_memory());
// Packed layout of a side needing staging: counts, displacements, packed
// types, total bytes (no buffer yet).
Status layout(const Pieces& p, Staged& s);
// The pieces to pack (all, or the one InPlace names) against the layout.
std::vector<pack::PieceRef> piece_refs(const Pieces& p, const Staged& s, InPlace only);

// Classifies both sides and stages what must be; false: nothing to stage.
Result<bool> prepare(StagedCall& c, InPlace in_place);
// At MPI_Finalize: frees the cached contiguous types of packed sizes.
void free_packed_types();

// After the system MPI's call ended with `called`: finishes `c` now
// (blocking, `request` null) or when `request` completes (non-blocking).
// Shared by the staged collectives and the reductions.
Status complete(std::shared_ptr<transport::Completion> c, MPI_Request* request, Status called);

// Whether some piece of `p` could be staged (its datatypes alone decide; no
// pointer query): else the call goes to the system MPI with nothing allocated.
bool may_stage_side(const Pieces& p);

// Runs a collective: `call(Staged* send, Staged* recv, MPI_Request* req)`
// calls the system MPI with a staged side's layout where not null and the
// user's arguments otherwise, and returns its code; `req` null: the blocking
// form.
template <class Call>
Status run_collective(MPI_Comm comm, coll::CollOpKind op, Pieces send, Pieces recv, InPlace in_place,
                      MPI_Request* request, Call call) {
  if (!request && collective_needs_progress(comm)) {
    // dtmpi's windows need this rank's progress (p2p_route.hpp): the
    // non-blocking form and dtmpi's wait, which progresses them
    MPI_Request r = MPI_REQUEST_NULL;
    DTMPI_TRY(run_collective(comm, op, std::move(send), std::move(recv), in_place, &r, call));
    return wait(&r, MPI_STATUS_IGNORE);
  }
  if (!may_stage_side(send) && !may_stage_side(recv)) return DTMPI_MPI_FORWARD(call(nullptr, nullptr, request));
  auto c = std::make_shared<StagedCall>();
  c->send = std::move(send);
  c->recv = std::move(recv);
  c->device_taken = collective_takes_device_memory(op);
  auto staged = prepare(*c, in_place);
  if (!staged) return staged.error();
  if (!staged.value()) return DTMPI_MPI_FORWARD(call(nullptr, nullptr, request));
  Status called = DTMPI_MPI_FORWARD(call(c->stage_send ? &c->ss : nullptr, c->stage_recv ? &c->rs : nullptr, request));
  return complete(std::move(c), request, std::move(called));
}

// Peers of a collective on `comm` (the remote group of an intercommunicator).
int peers_of(MPI_Comm comm);
// In- and out-degree of a communicator with a topology (the neighbor forms).
bool neighbor_counts(MPI_Comm comm, int& in, int& out);

}  // namespace dtmpi::interpose
