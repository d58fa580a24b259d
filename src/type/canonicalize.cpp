#include "type/canonicalize.hpp"

#include <utility>

namespace dtmpi::type {
namespace {

using Kind = TypeIR::Kind;

TypeIR with_off(TypeIR n, int64_t off) {
  n.off = off;
  return n;
}

// Local rules of a Stream whose child is already canonical. Returns true if it
// changed `n` (which may then be a Dense, a Stream or empty).
bool simplify_stream(TypeIR& n) {
  TypeIR& c = n.child();
  if (n.count == 0 || c.is_empty()) {
    n = TypeIR::empty();
    return true;
  }
  if (c.off != 0) {  // keep children of streams at offset 0: the stream holds it
    n.off += c.off;
    c.off = 0;
  }
  if (n.count == 1) {  // elision: the child inherits the stream's offset
    n = with_off(std::move(c), n.off);
    return true;
  }
  if (c.kind == Kind::Dense && c.len == n.stride) {  // dense folding
    n = TypeIR::dense(n.off, n.count * c.len);
    return true;
  }
  if (c.kind == Kind::Stream && n.stride == c.count * c.stride) {  // flattening
    TypeIR grand = std::move(c.child());
    n = TypeIR::stream(n.off, n.count * c.count, c.stride, std::move(grand));
    return true;
  }
  return false;
}

TypeIR canon(TypeIR n);

// Tries to absorb `next` into `acc` (both items of one Seq, in order).
bool try_merge(TypeIR& acc, const TypeIR& next) {
  if (acc.kind == Kind::Dense && next.kind == Kind::Dense && acc.off + acc.len == next.off) {
    acc.len += next.len;
    return true;
  }
  if (acc.kind == Kind::Stream) {
    const int64_t end = acc.off + acc.count * acc.stride;
    // next is one more element of acc
    if (next.off == end && same_shape(acc.child(), next) && next.kind != Kind::Stream) {
      ++acc.count;
      return true;
    }
    if (next.kind == Kind::Stream && next.off == end && next.stride == acc.stride &&
        same_shape(acc.child(), next.child())) {
      acc.count += next.count;
      return true;
    }
    if (next.kind == Kind::Stream && next.off == end && same_shape(acc.child(), next)) {
      ++acc.count;  // next is a whole element shaped like acc's child (a stream)
      return true;
    }
  }
  if (same_shape(acc, next)) {  // two whole items of one shape: a 2-element stream
    const int64_t off = acc.off;
    acc = TypeIR::stream(off, 2, next.off - off, with_off(std::move(acc), 0));
    return true;
  }
  return false;
}

TypeIR canon_seq(TypeIR n) {
  // canonicalize items, splice nested Seqs, drop empties; push the offset down
  std::vector<TypeIR> items;
  items.reserve(n.children.size());
  for (auto& raw : n.children) {
    TypeIR c = canon(std::move(raw));
    if (c.is_empty()) continue;
    if (c.kind == Kind::Seq) {
      for (auto& g : c.children) {
        g.off += c.off + n.off;
        items.push_back(std::move(g));
      }
    } else {
      c.off += n.off;
      items.push_back(std::move(c));
    }
  }
  for (bool changed = true; changed && items.size() > 1;) {
    changed = false;
    std::vector<TypeIR> merged;
    merged.reserve(items.size());
    for (auto& it : items) {
      if (!merged.empty() && try_merge(merged.back(), it)) {
        changed = true;
        continue;
      }
      merged.push_back(std::move(it));
    }
    for (auto& m : merged) {
      if (m.kind == Kind::Stream) {
        while (m.kind == Kind::Stream && simplify_stream(m)) changed = true;
      }
    }
    items = std::move(merged);
  }
  if (items.empty()) return TypeIR::empty();
  if (items.size() == 1) return std::move(items.front());
  return TypeIR::seq(std::move(items));
}

TypeIR canon(TypeIR n) {
  switch (n.kind) {
    case Kind::Dense:
      return n.len == 0 ? TypeIR::empty() : n;
    case Kind::Stream: {
      n.child() = canon(std::move(n.child()));
      while (n.kind == Kind::Stream && simplify_stream(n)) {
      }
      // a Stream over an (irregular) Seq stays as is: distributing it over the
      // items would reorder the packed stream.
      return n;
    }
    case Kind::Seq:
      return canon_seq(std::move(n));
  }
  return n;
}

}  // namespace

TypeIR canonicalize(TypeIR ir) {
  TypeIR out = canon(std::move(ir));
  if (out.is_empty()) out.off = 0;
  return out;
}

}  // namespace dtmpi::type
