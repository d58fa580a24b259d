// TypeIR: the datatype engine's description of an MPI typemap as a tree.
//
//   Dense  : `len` contiguous bytes at `off`
//   Stream : `count` copies of the child, copy i at off + i*stride (stride may be
//            negative or zero)
//   Seq    : the children one after another in pack order, each at off + its own off
//
// The packed stream of a node is the concatenation, in this order, of the bytes
// it describes; every rewrite in canonicalize.cpp must preserve it exactly.
// The IR knows nothing of MPI; translate.cpp builds it from an MPI datatype.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dtmpi::type {

struct TypeIR {
  enum class Kind : uint8_t { Dense, Stream, Seq };

  Kind kind = Kind::Seq;  // an empty Seq describes no bytes
  int64_t off = 0;        // byte offset relative to the parent's origin
  int64_t len = 0;        // Dense: bytes
  int64_t count = 0;      // Stream: repetitions
  int64_t stride = 0;     // Stream: bytes between repetitions
  std::vector<TypeIR> children;

  static TypeIR dense(int64_t off, int64_t len);
  static TypeIR stream(int64_t off, int64_t count, int64_t stride, TypeIR child);
  static TypeIR seq(std::vector<TypeIR> items);
  static TypeIR empty() { return TypeIR{}; }

  bool is_empty() const { return kind == Kind::Seq && children.empty(); }
  const TypeIR& child() const { return children.front(); }
  TypeIR& child() { return children.front(); }
};

// Bytes in the packed stream of one instance.
int64_t packed_size(const TypeIR& ir);
// Number of nodes (to bound the cost of building and canonicalizing).
int64_t node_count(const TypeIR& ir);
// Structural equality ignoring the root's own `off` (children's offsets count).
bool same_shape(const TypeIR& a, const TypeIR& b);
bool operator==(const TypeIR& a, const TypeIR& b);
// One-line-per-node text, indented by depth.
std::string to_string(const TypeIR& ir);

// Calls fn(offset, length) for each contiguous run of the packed stream in pack
// order, adjacent runs merged. The reference semantics used by tests.
void for_each_run(const TypeIR& ir, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace dtmpi::type
