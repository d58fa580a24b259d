#include "interpose/coll_p2p.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "interpose/entries.hpp"
#include "runtime/buffers.hpp"
#include "runtime/device_pack.hpp"
#include "transport/peers.hpp"
#include "transport/transfer.hpp"

namespace rt = dtmpi::runtime;
namespace tp = dtmpi::transport;

namespace dtmpi::interpose {
namespace {

// The communicator's private duplicate, kept as an attribute and freed with
// `comm`: made where every rank of `comm` is in one call -- the creation of a
// topology communicator, or the first blocking Alltoallv/w on `comm`.
int g_dup_keyval = MPI_KEYVAL_INVALID;

int delete_dup(MPI_Comm, int, void* value, void*) {
  auto* dup = static_cast<MPI_Comm*>(value);
  REAL(MPI_Comm_free)(dup);
  delete dup;
  return MPI_SUCCESS;
}

// The duplicate of `comm`, or MPI_COMM_NULL; `create`: make it if missing
// (collective: only where every rank of `comm` is in the same call).
MPI_Comm private_dup(MPI_Comm comm, bool create) {
  if (g_dup_keyval == MPI_KEYVAL_INVALID) {
    static std::once_flag once;
    std::call_once(once, [] { REAL(MPI_Comm_create_keyval)(MPI_COMM_NULL_COPY_FN, delete_dup, &g_dup_keyval, nullptr); });
  }
  void* value = nullptr;
  int flag = 0;
  REAL(MPI_Comm_get_attr)(comm, g_dup_keyval, &value, &flag);
  if (flag) return *static_cast<MPI_Comm*>(value);
  if (!create) return MPI_COMM_NULL;
  auto* dup = new MPI_Comm(MPI_COMM_NULL);
  if (!DTMPI_MPI_WARN(REAL(MPI_Comm_dup)(comm, dup))) {
    delete dup;
    return MPI_COMM_NULL;
  }
  REAL(MPI_Comm_set_name)(*dup, const_cast<char*>("dtmpi collectives"));
  REAL(MPI_Comm_set_attr)(comm, g_dup_keyval, dup);
  return *dup;
}

// One side: either packed into one buffer (device memory on the pieces' GPU,
// else host staging) and moved as byte slices, or moved piece by piece with
// the user's datatypes (dtmpi's point-to-point takes any memory).
struct Side {
  Staged s;
  bool packed = false;
  rt::DeviceBuffer device;
  char* base = nullptr;
  rt::PointerInfo base_info;
  ~Side() { rt::release_device_buffer(device); }
};

// `receiving` GPU pieces are not packed: each is received with its own
// datatype, so dtmpi's receiver unpacks straight from the sender's packed
// slice (over CUDA IPC) instead of copying the slice and unpacking after.
Status prepare_side(const Pieces& p, Side& side, bool receiving) {
  if (!needs_staging(p, side.s) || !side.s.infos.empty()) return ok_status();  // as they are
  if (side.s.refused) return Error{side.s.refused, ""};
  if (receiving && rt::on_gpu(side.s.info)) return ok_status();
  DTMPI_TRY(layout(p, side.s));
  side.packed = true;
  if (rt::on_gpu(side.s.info)) {
    auto d = rt::acquire_device_buffer(side.s.info.device, static_cast<size_t>(side.s.total));
    if (!d) return Error{MPI_ERR_NO_MEM, "no device buffer for a collective: " + d.error().what};
    side.device = d.value();
    side.base = static_cast<char*>(side.device.ptr);
    side.base_info.kind = rt::MemKind::kDevice;
    side.base_info.device = side.device.device;
  } else {
    auto st = rt::acquire_staging(static_cast<size_t>(side.s.total));
    if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a collective: " + st.error().what};
    side.s.staging = st.value();
    side.base = static_cast<char*>(side.s.staging.ptr);
    side.base_info.kind = side.s.staging.pinned ? rt::MemKind::kPinnedHost : rt::MemKind::kHost;
    side.base_info.device_ptr = side.s.staging.pinned ? side.s.staging.ptr : nullptr;
  }
  return ok_status();
}

// The pieces a rank sends to itself, matched as MPI matches them (graphs and
// the everyone route: the k-th message to itself with the k-th receive from
// itself, one tag, posting order; Cartesian: send block i with receive block
// i^1) and moved here instead of as messages to itself -- which cost a
// descriptor, an IPC mapping and a handshake each (~20 us of host time on the
// GPU machines; a 256^3 halo on one rank is 26 such pieces). Only where the
// sent bytes are packed already (out.packed) and the receive pieces are GPU
// memory unpacked straight from them (one batched launch for all), or a host
// staging buffer that takes them as bytes. Pairs whose sizes do not fit (a
// receive too short: MPI_ERR_TRUNCATE) are left to the messages, which report
// it. Marks the pieces done in `sent`/`received`.
Status exchange_with_itself(const Pieces& send, const Pieces& recv, const P2pRoute& route, MPI_Comm dup,
                            bool send_to_all, const Side& out, const Side& in, std::vector<char>& sent,
                            std::vector<char>& received) {
  if (!out.packed || !out.s.infos.empty() || !in.s.infos.empty() || in.s.plans.empty()) return ok_status();
  // (a kernel on the receive pieces' GPU reads the packed slices: the same GPU, or host memory it maps)
  const bool unpack_on_gpu = !in.packed && rt::on_gpu(in.s.info) &&
                             (!rt::on_gpu(out.base_info) || out.base_info.device == in.s.info.device);
  const bool host_bytes = in.packed && !rt::on_gpu(in.base_info) && !rt::on_gpu(out.base_info);
  if (!unpack_on_gpu && !host_bytes) return ok_status();
  int me = -1;
  REAL(MPI_Comm_rank)(dup, &me);
  auto send_piece = [&](size_t i) { return send_to_all ? size_t{0} : i; };
  std::vector<size_t> to_me, from_me;  // indices into dests / sources
  for (size_t i = 0; i < route.dests.size(); ++i)
    if (route.dests[i] == me && send.counts[send_piece(i)] > 0) to_me.push_back(i);
  for (size_t j = 0; j < route.sources.size(); ++j)
    if (route.sources[j] == me && recv.counts[j] > 0) from_me.push_back(j);
  std::vector<dtmpi::pack::PieceRef> refs;
  std::vector<std::pair<size_t, size_t>> pairs;  // (dest index, source index)
  for (size_t n = 0; n < to_me.size(); ++n) {
    const size_t i = to_me[n];
    size_t j = SIZE_MAX;
    if (route.cartesian) {
      if ((i ^ 1) < route.sources.size() && route.sources[i ^ 1] == me && recv.counts[i ^ 1] > 0) j = i ^ 1;
    } else if (n < from_me.size()) {
      j = from_me[n];
    }
    const size_t k = send_piece(i);
    // (a type dtmpi could not plan leaves its side to the system MPI, plans half filled)
    if (j == SIZE_MAX || !out.s.plans[k] || j >= in.s.plans.size() || !in.s.plans[j]) continue;
    const int64_t bytes = int64_t{send.counts[k]} * out.s.plans[k]->size;
    const int64_t rsize = in.s.plans[j]->size;
    if (rsize <= 0 || bytes % rsize != 0 || bytes / rsize > recv.counts[j]) continue;  // the messages report it
    if (!route.cartesian && n != pairs.size()) break;  // a skipped pair shifts the rest: all left to messages
    pairs.emplace_back(i, j);
    if (unpack_on_gpu)
      refs.push_back({in.s.plans[j].get(), bytes / rsize, recv.piece(static_cast<int>(j)), out.s.byte_displs[k]});
    else
      std::memcpy(in.base + in.s.byte_displs[j], out.base + out.s.byte_displs[k], static_cast<size_t>(bytes));
  }
  if (!refs.empty()) {
    auto ok = rt::unpack_pieces(refs.data(), refs.size(), out.base, out.base_info, in.s.info, out.s.total);
    if (!ok) return Error{MPI_ERR_OTHER, "moving a collective's pieces to itself failed: " + ok.error().what};
  }
  for (const auto& [i, j] : pairs) {
    sent[i] = 1;
    received[j] = 1;
  }
  rt::count(rt::Counter::kSelfPieces, pairs.size());
  return ok_status();
}

}  // namespace

bool p2p_collectives(MPI_Comm comm) {
  if (!tp::descriptors_possible()) return false;
  int inter = 0;
  REAL(MPI_Comm_test_inter)(comm, &inter);
  return !inter;
}

void prepare_p2p_collectives(MPI_Comm comm) {
  if (p2p_collectives(comm)) private_dup(comm, true);
}

namespace {

bool neighbor_lists(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& dests, bool& cartesian) {
  int kind = MPI_UNDEFINED;
  REAL(MPI_Topo_test)(comm, &kind);
  if (kind == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    REAL(MPI_Dist_graph_neighbors_count)(comm, &in, &out, &weighted);
    sources.resize(static_cast<size_t>(in));
    dests.resize(static_cast<size_t>(out));
    std::vector<int> sw(static_cast<size_t>(in) + 1), dw(static_cast<size_t>(out) + 1);
    return DTMPI_MPI_WARN(REAL(MPI_Dist_graph_neighbors)(comm, in, sources.data(),
                                                         weighted ? sw.data() : MPI_UNWEIGHTED, out, dests.data(),
                                                         weighted ? dw.data() : MPI_UNWEIGHTED));
  }
  cartesian = kind == MPI_CART;
  if (kind == MPI_CART) {  // per dimension: the lower neighbour, then the upper
    int nd = 0;
    REAL(MPI_Cartdim_get)(comm, &nd);
    sources.clear();
    for (int d = 0; d < nd; ++d) {
      int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
      REAL(MPI_Cart_shift)(comm, d, 1, &lo, &hi);
      sources.push_back(lo);
      sources.push_back(hi);
    }
    dests = sources;
    return true;
  }
  if (kind == MPI_GRAPH) {
    int me = 0, n = 0;
    REAL(MPI_Comm_rank)(comm, &me);
    REAL(MPI_Graph_neighbors_count)(comm, me, &n);
    sources.resize(static_cast<size_t>(n));
    REAL(MPI_Graph_neighbors)(comm, me, n, sources.data());
    dests = sources;
    return true;
  }
  return false;
}

}  // namespace

bool p2p_route_everyone(MPI_Comm comm, const void* sendbuf, MPI_Request* req, P2pRoute& route) {
  if (req || sendbuf == MPI_IN_PLACE || !p2p_collectives(comm)) return false;
  route.sources.resize(static_cast<size_t>(peers_of(comm)));
  for (size_t i = 0; i < route.sources.size(); ++i) route.sources[i] = static_cast<int>(i);
  route.dests = route.sources;
  route.cartesian = false;
  return true;
}

bool p2p_route_neighbors(MPI_Comm comm, MPI_Request* req, P2pRoute& route) {
  return !req && p2p_collectives(comm) && private_dup(comm, false) != MPI_COMM_NULL &&
         neighbor_lists(comm, route.sources, route.dests, route.cartesian);
}

Status exchange_p2p(const Pieces& send, const Pieces& recv, const P2pRoute& route, MPI_Comm comm, bool send_to_all) {
  const std::vector<int>& sources = route.sources;
  const std::vector<int>& dests = route.dests;
  const bool cartesian = route.cartesian;
  const MPI_Comm dup = private_dup(comm, true);  // exists already for the neighborhood forms
  if (dup == MPI_COMM_NULL) return Error{MPI_ERR_INTERN, ""};
  rt::count(rt::Counter::kStagedCollectives);
  rt::count(rt::Counter::kP2pCollectives);
  Side out, in;
  DTMPI_TRY(prepare_side(send, out, false));
  DTMPI_TRY(prepare_side(recv, in, true));
  if (out.packed && out.s.total > 0) {  // every outgoing piece with one batched pack
    const auto refs = piece_refs(send, out.s, InPlace::all());
    auto ok = rt::pack_pieces(refs.data(), refs.size(), out.s.info, out.base, out.base_info, out.s.total);
    if (!ok) return Error{MPI_ERR_OTHER, "packing a collective's pieces failed: " + ok.error().what};
  }
  // receives first, in source order, then sends in destination order. With
  // repeated neighbours MPI-4.1 sec. 8.6 pairs them so: graphs, the k-th
  // message between two ranks with the k-th receive (one tag, posting order);
  // Cartesian topologies, block s of the sender with block s^1 of the
  // receiver (the other side of the same dimension, also when a periodic
  // dimension of 1 or 2 processes makes both neighbours one process): tags.
  std::vector<MPI_Request> reqs;
  reqs.reserve(sources.size() + dests.size());
  std::vector<char> sent(dests.size(), 0), received(sources.size(), 0);  // moved by exchange_with_itself
  DTMPI_TRY(exchange_with_itself(send, recv, route, dup, send_to_all, out, in, sent, received));
  // one message per piece with a count and a peer: a slice of the packed
  // buffer as bytes, or the piece with its own datatype (as the interposed
  // MPI_Isend / MPI_Irecv take them); the first error stops the posting
  Status posted = ok_status();
  auto post = [&](const Pieces& p, Side& side, const std::vector<int>& peers, bool sending) {
    const bool all = sending && send_to_all;
    for (int i = 0; i < (all ? static_cast<int>(peers.size()) : p.size()) && posted; ++i) {
      const auto k = all ? size_t{0} : static_cast<size_t>(i);  // the piece
      if (p.counts[k] <= 0 || peers[static_cast<size_t>(i)] == MPI_PROC_NULL) continue;
      if ((sending ? sent : received)[static_cast<size_t>(i)]) continue;
      const int tag = !cartesian ? 0 : sending ? i : (i ^ 1);
      void* buf = side.packed ? side.base + side.s.byte_displs[k] : p.piece(static_cast<int>(k));
      const int count = side.packed ? static_cast<int>(int64_t{p.counts[k]} * side.s.plans[k]->size) : p.counts[k];
      const MPI_Datatype type = side.packed ? MPI_BYTE : p.types[k];
      reqs.push_back(MPI_REQUEST_NULL);
      const int peer = peers[static_cast<size_t>(i)];
      if (sending && side.packed) {
        // packed bytes that stay put until every rank is done: the receiver
        // reads them where they lie, no copy into a buffer of the transport's
        // own (packed host bytes only in the host test mode: send_in_place
        // decides). Only dtmpi's own pool buffer is shared so, never the
        // application's, even when its pieces are contiguous (see
        // send_in_place).
        auto placed = tp::send_in_place(side.base, side.s.byte_displs[k], count, side.base_info, peer, tag, dup, &reqs.back());
        if (!placed) posted = placed.error();
        if (!placed || placed.value()) continue;
      }
      // from kInPlaceMin bytes on, a received piece may meet a descriptor: its
      // sender's piece of the same size may be sent in place
      posted = sending ? isend(buf, count, type, peer, tag, dup, &reqs.back())
                       : irecv(buf, count, type, peer, tag, dup, &reqs.back(), tp::kInPlaceMin);
    }
  };
  post(recv, in, sources, false);
  post(send, out, dests, true);
  Status waited = waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  DTMPI_TRY(first_error(std::move(posted), std::move(waited)));
  if (in.packed && in.s.total > 0) {  // every incoming host piece with one unpack pass
    const auto refs = piece_refs(recv, in.s, InPlace::none());
    auto ok = rt::unpack_pieces(refs.data(), refs.size(), in.base, in.base_info, in.s.info, in.s.total);
    if (!ok) return Error{MPI_ERR_OTHER, "unpacking a collective's pieces failed: " + ok.error().what};
  }
  return ok_status();
}

}  // namespace dtmpi::interpose
