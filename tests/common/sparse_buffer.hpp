// Buffers for datatypes whose extent passes 2^31 bytes: an address range that
// costs memory only where it is written (MAP_NORESERVE), plus the byte
// patterns the large-count tests place at a type's blocks and expect back.
#pragma once
#include <sys/mman.h>

#include <cstdint>
#include <vector>

namespace dtmpi::testing {

class SparseBuffer {
 public:
  explicit SparseBuffer(int64_t bytes) : bytes_(static_cast<size_t>(bytes)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
  }
  ~SparseBuffer() {
    if (data_) munmap(data_, bytes_);
  }
  SparseBuffer(const SparseBuffer&) = delete;
  SparseBuffer& operator=(const SparseBuffer&) = delete;
  unsigned char* data() const { return data_; }
  bool ok() const { return data_ != nullptr; }

 private:
  size_t bytes_;
  unsigned char* data_;
};

// One contiguous run of a typemap: `len` bytes at `off` from the buffer.
struct Block {
  int64_t off, len;
};

// The byte a test stores at buffer offset `off`: differs between neighbours
// and between the far ends of a 2^32-byte range.
inline unsigned char pattern_at(int64_t off, unsigned seed = 0) {
  const uint64_t x = static_cast<uint64_t>(off) * 0x9E3779B97F4A7C15ull + seed;
  return static_cast<unsigned char>((x >> 32) ^ (x >> 56) ^ 0x5A);
}

inline void fill_blocks(unsigned char* base, const std::vector<Block>& blocks, unsigned seed = 0) {
  for (const auto& b : blocks)
    for (int64_t i = 0; i < b.len; ++i) base[b.off + i] = pattern_at(b.off + i, seed);
}

// The packed stream of `blocks` filled by fill_blocks.
inline std::vector<unsigned char> packed_pattern(const std::vector<Block>& blocks, unsigned seed = 0) {
  std::vector<unsigned char> out;
  for (const auto& b : blocks)
    for (int64_t i = 0; i < b.len; ++i) out.push_back(pattern_at(b.off + i, seed));
  return out;
}

// Whether `base` holds the pattern in every block and zero on the byte just
// before and after each block that no block covers (nothing written outside).
inline bool holds_pattern(const unsigned char* base, const std::vector<Block>& blocks, unsigned seed = 0) {
  auto covered = [&](int64_t at) {
    for (const auto& b : blocks)
      if (at >= b.off && at < b.off + b.len) return true;
    return false;
  };
  for (const auto& b : blocks) {
    for (int64_t i = 0; i < b.len; ++i)
      if (base[b.off + i] != pattern_at(b.off + i, seed)) return false;
    if (b.off > 0 && !covered(b.off - 1) && base[b.off - 1] != 0) return false;
    if (!covered(b.off + b.len) && base[b.off + b.len] != 0) return false;
  }
  return true;
}

}  // namespace dtmpi::testing
