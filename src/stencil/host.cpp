// Storage and byte movement of the exchange: host memory here, device memory
// in device.cu (the functions below hand device domains over to it).
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {
namespace {

// Rows start on 64-byte boundaries (a cache line; the vector units' widest load).
constexpr int64_t kHostRowAlign = 64;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// The first byte of point `p` of quantity `q` in subdomain `s`.
char* at(const Subdomain& s, void* base, int64_t esize, int64_t pitch, const Dim3& p) {
  const Box a = s.allocated();
  return static_cast<char*>(base) + ((p.z - a.lo.z) * a.size().y + (p.y - a.lo.y)) * pitch + (p.x - a.lo.x) * esize;
}

// Copies `box` of every quantity between a subdomain and a packed stream
// (quantity after quantity, each x fastest), one row at a time. `Byte` is
// char when packing, const char when unpacking.
template <bool kPack, class Byte>
Byte* move_rows(DomainImpl& d, const Region& r, Byte* packed) {
  const Subdomain& s = d.subs[static_cast<size_t>(r.sub)];
  for (size_t q = 0; q < d.quantities.size(); ++q) {
    const Box& b = r.boxes[q];
    if (b.empty()) continue;
    const int64_t esize = static_cast<int64_t>(d.quantities[q].size), row = b.size().x * esize;
    void* base = s.current_data(static_cast<int>(q));
    const int64_t pitch = s.pitch(static_cast<int>(q));
    for (int64_t z = b.lo.z; z < b.hi.z; ++z)
      for (int64_t y = b.lo.y; y < b.hi.y; ++y) {
        char* mem = at(s, base, esize, pitch, {b.lo.x, y, z});
        if constexpr (kPack) std::memcpy(packed, mem, static_cast<size_t>(row));
        else std::memcpy(mem, packed, static_cast<size_t>(row));
        packed += row;
      }
  }
  return packed;
}

}  // namespace

Status allocate_storage(DomainImpl& d) {
  if (d.memory == Memory::kDevice) return device_allocate(d);
  for (Subdomain& s : d.subs) {
    const Dim3 a = s.allocated().size();
    for (const QuantityInfo& q : d.quantities) {
      const int64_t align = std::max<int64_t>(kHostRowAlign, static_cast<int64_t>(q.align));
      const int64_t pitch = round_up(a.x * static_cast<int64_t>(q.size), align);
      const size_t bytes = static_cast<size_t>(pitch * a.y * a.z);
      for (auto* list : {&Access::current(s), &Access::next(s)}) {
        void* p = std::aligned_alloc(static_cast<size_t>(align), bytes);
        if (!p)
          return Error{MPI_ERR_NO_MEM, "dtmpi::stencil: allocating " + std::to_string(bytes) + " bytes of quantity '" +
                                           q.name + "' failed"};
        std::memset(p, 0, bytes);
        list->push_back(p);
      }
      Access::pitch(s).push_back(pitch);
    }
  }
  for (Peer& p : d.peers) {
    p.send_host = static_cast<char*>(std::malloc(static_cast<size_t>(std::max<int64_t>(p.send_bytes, 1))));
    p.recv_host = static_cast<char*>(std::malloc(static_cast<size_t>(std::max<int64_t>(p.recv_bytes, 1))));
    if (!p.send_host || !p.recv_host)
      return Error{MPI_ERR_NO_MEM, "dtmpi::stencil: allocating the message buffers for rank " + std::to_string(p.rank) +
                                       " failed"};
  }
  return ok_status();
}

void release_storage(DomainImpl& d) noexcept {
  if (d.memory == Memory::kDevice) {
    device_release(d);
    return;
  }
  for (Subdomain& s : d.subs) {
    for (void* p : Access::current(s)) std::free(p);
    for (void* p : Access::next(s)) std::free(p);
    Access::current(s).clear();
    Access::next(s).clear();
  }
  for (Peer& p : d.peers) {
    std::free(p.send_host);  // null for shared-memory peers
    std::free(p.recv_host);
    p.send_host = p.recv_host = nullptr;
  }
}

void pack_peer(DomainImpl& d, const Peer& p, char* out) {
  for (const Region& r : p.send) out = move_rows<true>(d, r, out);
}

void unpack_peer(DomainImpl& d, const Peer& p, const char* in) {
  for (const Region& r : p.recv) in = move_rows<false>(d, r, in);
}

// The message peers only: shared-memory peers are packed into their
// receiver's buffer and unpacked from this rank's (exchange.cpp).
Status pack_peers(DomainImpl& d) {
  if (d.memory == Memory::kDevice) return device_pack(d);
  for (Peer& p : d.peers)
    if (!p.shared) pack_peer(d, p, p.send_host);
  return ok_status();
}

Status unpack_peers(DomainImpl& d) {
  if (d.memory == Memory::kDevice) return device_unpack(d);
  for (Peer& p : d.peers)
    if (!p.shared) unpack_peer(d, p, p.recv_host);
  return ok_status();
}

Status copy_local(DomainImpl& d) {
  if (d.memory == Memory::kDevice) return device_copy_local(d);
  for (const LocalCopy& c : d.copies) {
    const Subdomain& from = d.subs[static_cast<size_t>(c.from.sub)];
    const Subdomain& to = d.subs[static_cast<size_t>(c.to.sub)];
    for (size_t q = 0; q < d.quantities.size(); ++q) {
      const Box &src = c.from.boxes[q], &dst = c.to.boxes[q];
      const Dim3 n = src.size();
      if (src.empty()) continue;
      const int qi = static_cast<int>(q);
      const int64_t esize = static_cast<int64_t>(d.quantities[q].size);
      for (int64_t z = 0; z < n.z; ++z)
        for (int64_t y = 0; y < n.y; ++y) {
          // memmove: a periodic self-neighbour never overlaps its own ghosts,
          // but nothing is lost by not relying on it
          std::memmove(at(to, to.current_data(qi), esize, to.pitch(qi), {dst.lo.x, dst.lo.y + y, dst.lo.z + z}),
                       at(from, from.current_data(qi), esize, from.pitch(qi), {src.lo.x, src.lo.y + y, src.lo.z + z}),
                       static_cast<size_t>(n.x * esize));
        }
    }
  }
  return ok_status();
}

}  // namespace dtmpi::stencil
