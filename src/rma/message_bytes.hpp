// The bytes of one message of the one-sided protocol (a request with its
// payload, a reply with get data or old values). Small ones are a vector;
// large ones (kPooledMin and up) come from the runtime's staging pool:
// pinned and mapped host memory where a GPU is in use, so the GPU packers'
// copies to and from device memory run at the copy engine's speed instead
// of through pageable memory, and no byte is zero-filled first.
#pragma once
#include <cstddef>
#include <vector>

#include "runtime/buffers.hpp"

namespace dtmpi::rma {

class MessageBytes {
 public:
  static constexpr size_t kPooledMin = size_t{64} << 10;

  MessageBytes() = default;
  // Adopts a vector (control messages, small replies).
  MessageBytes(std::vector<unsigned char> v) : heap_(std::move(v)), size_(heap_.size()) {}  // NOLINT: implicit
  // `n` bytes whose contents are unspecified until written.
  static MessageBytes allocate(size_t n);

  MessageBytes(MessageBytes&& o) noexcept;
  MessageBytes& operator=(MessageBytes&& o) noexcept;
  MessageBytes(const MessageBytes&) = delete;
  MessageBytes& operator=(const MessageBytes&) = delete;
  ~MessageBytes() { release(); }

  unsigned char* data() { return pooled_.ptr ? static_cast<unsigned char*>(pooled_.ptr) : heap_.data(); }
  const unsigned char* data() const {
    return pooled_.ptr ? static_cast<const unsigned char*>(pooled_.ptr) : heap_.data();
  }
  size_t size() const { return size_; }
  // Pinned and mapped host memory: GPU kernels read and write it in place.
  bool mapped() const { return pooled_.ptr && pooled_.pinned; }

 private:
  void release();
  std::vector<unsigned char> heap_;
  runtime::Staging pooled_{};
  size_t size_ = 0;
};

}  // namespace dtmpi::rma
