#include "rma/message_bytes.hpp"

#include <cstring>
#include <utility>

namespace dtmpi::rma {

MessageBytes MessageBytes::allocate(size_t n) {
  MessageBytes m;
  if (n >= kPooledMin) {
    auto s = runtime::acquire_staging(n);
    if (s) {  // else a vector: slower copies, the same bytes
      m.pooled_ = s.value();
      m.size_ = n;
      return m;
    }
  }
  m.heap_.resize(n);
  m.size_ = n;
  return m;
}

MessageBytes::MessageBytes(MessageBytes&& o) noexcept
    : heap_(std::move(o.heap_)), pooled_(std::exchange(o.pooled_, runtime::Staging{})), size_(std::exchange(o.size_, 0)) {}

MessageBytes& MessageBytes::operator=(MessageBytes&& o) noexcept {
  if (this != &o) {
    release();
    heap_ = std::move(o.heap_);
    pooled_ = std::exchange(o.pooled_, runtime::Staging{});
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void MessageBytes::release() {
  if (pooled_.ptr) runtime::release_staging(pooled_);
  pooled_ = runtime::Staging{};
  heap_.clear();
  size_ = 0;
}

}  // namespace dtmpi::rma
