// Shared by the stencil tests on host and device memory: every point's value
// is a function of (quantity, global coordinate), so after an exchange every
// ghost point can be checked against the point it copies (wrapped where the
// axis is periodic), and ghosts past a non-periodic boundary must keep their
// sentinel. `Memory` moves one quantity's whole allocation to or from the host
// (a memcpy for host domains, cudaMemcpy for device ones).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "dtmpi/stencil.hpp"

namespace stencil_check {

namespace st = dtmpi::stencil;

struct Odd3 {  // an element size that no word divides
  unsigned char b[3];
};
struct Wide16 {
  double a;
  int64_t b;
};

inline uint64_t mix(uint64_t k) {  // splitmix64
  k += 0x9e3779b97f4a7c15ull;
  k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
  k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
  return k ^ (k >> 31);
}

// The bytes of quantity q (element size n) at global point p, generation g.
inline void value(int q, size_t n, const st::Dim3& p, int g, unsigned char* out) {
  uint64_t k = mix((static_cast<uint64_t>(q) << 56) ^ (static_cast<uint64_t>(g) << 48) ^
                   (static_cast<uint64_t>(p.x) << 32) ^ (static_cast<uint64_t>(p.y) << 16) ^ static_cast<uint64_t>(p.z));
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0 && i) k = mix(k);
    out[i] = static_cast<unsigned char>(k >> (8 * (i % 8)));
  }
  if (n == 8) out[7] &= 0x3f;  // doubles stay finite (no NaN), so memcmp and == agree
}
constexpr unsigned char kSentinel = 0xEE;

using Download = std::function<std::vector<unsigned char>(const st::Subdomain&, int q, size_t bytes)>;
using Upload = std::function<void(const st::Subdomain&, int q, const std::vector<unsigned char>&)>;

inline size_t alloc_bytes(const st::Subdomain& s, int q) {
  const st::Dim3 a = s.allocated().size();
  return static_cast<size_t>(s.pitch(q) * a.y * a.z);
}
inline size_t offset_of(const st::Subdomain& s, int q, size_t esize, const st::Dim3& p) {
  const st::Box a = s.allocated();
  return static_cast<size_t>(((p.z - a.lo.z) * a.size().y + (p.y - a.lo.y)) * s.pitch(q)) +
         static_cast<size_t>(p.x - a.lo.x) * esize;
}

// Owned points get value(generation g), ghosts the sentinel.
inline void fill(st::DistributedDomain& d, const std::vector<size_t>& esize, int g, const Upload& up) {
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < static_cast<int>(esize.size()); ++q) {
      std::vector<unsigned char> img(alloc_bytes(s, q), kSentinel);
      const st::Box b = s.box();
      for (int64_t z = b.lo.z; z < b.hi.z; ++z)
        for (int64_t y = b.lo.y; y < b.hi.y; ++y)
          for (int64_t x = b.lo.x; x < b.hi.x; ++x)
            value(q, esize[static_cast<size_t>(q)], {x, y, z}, g, &img[offset_of(s, q, esize[static_cast<size_t>(q)], {x, y, z})]);
      up(s, q, img);
    }
}

// After an exchange: every point of every allocation is what it must be.
// `reach[q]`, where given: quantity q's own radius (ghosts beyond it keep
// the sentinel). Returns the number of wrong points (the first few reported).
inline int64_t verify(st::DistributedDomain& d, const std::vector<size_t>& esize, int g, const std::array<bool, 3>& periodic,
                      const Download& down, const std::vector<st::Radius>& reach = {}) {
  const st::Dim3 e = d.extent();
  int64_t wrong = 0;
  std::vector<unsigned char> want(64);
  for (const st::Subdomain& s : d.subdomains())
    for (int q = 0; q < static_cast<int>(esize.size()); ++q) {
      const size_t n = esize[static_cast<size_t>(q)];
      const std::vector<unsigned char> img = down(s, q, alloc_bytes(s, q));
      const st::Box a = s.allocated();
      for (int64_t z = a.lo.z; z < a.hi.z; ++z)
        for (int64_t y = a.lo.y; y < a.hi.y; ++y)
          for (int64_t x = a.lo.x; x < a.hi.x; ++x) {
            st::Dim3 w{x, y, z};
            bool outside = false;
            if (!reach.empty())  // past quantity q's own radius: never exchanged
              for (int ax = 0; ax < 3; ++ax)
                outside |= w[ax] < s.box().lo[ax] - reach[static_cast<size_t>(q)].low(ax) ||
                           w[ax] >= s.box().hi[ax] + reach[static_cast<size_t>(q)].high(ax);
            for (int ax = 0; ax < 3; ++ax)
              if (w[ax] < 0 || w[ax] >= e[ax]) {
                if (periodic[static_cast<size_t>(ax)]) w[ax] = (w[ax] + e[ax]) % e[ax];
                else outside = true;
              }
            if (outside) std::memset(want.data(), kSentinel, n);
            else value(q, n, w, g, want.data());
            if (std::memcmp(want.data(), &img[offset_of(s, q, n, {x, y, z})], n) != 0 && ++wrong <= 5)
              ADD_FAILURE() << "subdomain " << s.id() << " quantity " << q << " point (" << x << "," << y << "," << z
                            << ")" << (outside ? " (past a non-periodic boundary)" : "") << ": wrong value";
          }
    }
  return wrong;
}

}  // namespace stencil_check
