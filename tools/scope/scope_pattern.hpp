// The bytes every transfer row copies, so that its destination can be checked
// (the suite checks itself: a transfer that moved the wrong bytes is an error,
// not a bandwidth). Byte `offset` of a source buffer is a function of the
// offset within its 4 KiB page and of the page, so bytes that land at the wrong
// place within a page or on the wrong page are both caught. Host and device
// code compute the same values.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define DTMPI_SCOPE_HD __host__ __device__
#else
#define DTMPI_SCOPE_HD
#endif

namespace dtmpi::scope {

DTMPI_SCOPE_HD inline uint8_t pattern_in_page(uint64_t offset) {
  const uint32_t i = static_cast<uint32_t>(offset & 4095);
  return static_cast<uint8_t>(i * 0x3bu + (i >> 8) * 0x11u + 0x5au);
}

DTMPI_SCOPE_HD inline uint8_t pattern_page_tag(uint64_t offset, uint32_t seed) {
  const uint32_t page = static_cast<uint32_t>(offset >> 12);
  return static_cast<uint8_t>(((page ^ seed) * 0x9E3779B1u) >> 24);
}

DTMPI_SCOPE_HD inline uint8_t pattern(uint64_t offset, uint32_t seed) {
  return static_cast<uint8_t>(pattern_in_page(offset) ^ pattern_page_tag(offset, seed));
}

// Where useful byte k of a transfer lives in a buffer: dense (width 0), rows
// of `width` bytes `pitch` apart (2D), or planes of `height` such rows
// `pitch * rows` apart (3D; `rows` = the rows a plane spans).
struct Layout {
  uint64_t width = 0, pitch = 0, height = 0, rows = 0;
  DTMPI_SCOPE_HD uint64_t at(uint64_t k) const {
    if (width == 0) return k;
    if (height == 0) return (k / width) * pitch + k % width;
    const uint64_t plane = width * height, z = k / plane, r = k % plane;
    return z * pitch * rows + (r / width) * pitch + r % width;
  }
  // bytes from the first useful byte to one past the last, for `bytes` useful ones
  DTMPI_SCOPE_HD uint64_t span(uint64_t bytes) const { return bytes ? at(bytes - 1) + 1 : 0; }
};

}  // namespace dtmpi::scope
