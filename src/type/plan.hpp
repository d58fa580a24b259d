// Pack plans: what the packers execute. A plan is compiled once from the
// canonical TypeIR at commit time and cached on the datatype.
//
//  StridedPlan   : blocks of `block` bytes at offset + sum(i_d * stride_d),
//                  dims[0] innermost (fastest), any number of dims up to kMaxDims.
//  IrregularPlan : an outer strided repetition of a short list of pieces, each
//                  piece itself a StridedPlan; pack order is, for each outer
//                  index (dims[0] fastest), every piece in order. A truly
//                  irregular indexed type is one outer index over a list of
//                  0-dim pieces (offset, length): a compact block list.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "base/result.hpp"
#include "type/ir.hpp"

namespace dtmpi::type {

inline constexpr int kMaxDims = 16;
inline constexpr int64_t kMaxPieces = int64_t{1} << 22;

struct Dim {
  int64_t count;
  int64_t stride;
};

struct StridedPlan {
  int64_t offset = 0;
  int64_t block = 0;  // contiguous bytes per block; 0 means no bytes at all
  int ndims = 0;
  std::array<Dim, kMaxDims> dims{};

  int64_t blocks() const;
  int64_t bytes() const { return block * blocks(); }
  bool contiguous() const { return ndims == 0; }
  // Adds a repetition of `count` copies `stride` apart as the new outermost
  // level, folding it into the block or the top dim when it continues them.
  // Returns false if the plan has no room for another dim.
  bool repeat(int64_t count, int64_t stride);
};

// One entry of an irregular plan's block list: a single block, or (when
// `strided` >= 0) the multi-block StridedPlan IrregularPlan::strided[strided].
struct Piece {
  int64_t offset;        // first byte, relative to the outer position
  int64_t block;         // bytes per block
  int32_t strided = -1;
};

struct IrregularPlan {
  StridedPlan outer;                // offset + dims of the repetition; block unused
  std::vector<Piece> pieces;        // in pack order
  std::vector<StridedPlan> strided; // the multi-block pieces' full plans
  std::vector<int64_t> piece_start; // packed offset of each piece in one body
  int64_t body_bytes = 0;
  // When every piece is one block of whole 8-byte words (lists of doubles,
  // long ints, ...), the same list packed into 8 bytes per block for the CPU
  // packer: offset * 65536 + words (offsets within +-2^47, < 65536 words).
  // A third of the metadata traffic of `pieces` on large irregular types.
  std::vector<int64_t> word_blocks;

  int64_t outer_count() const;
  int64_t bytes() const { return body_bytes * outer_count(); }
  int64_t piece_bytes(const Piece& p) const {
    return p.strided < 0 ? p.block : strided[static_cast<size_t>(p.strided)].bytes();
  }
};

// Data a packer attaches to a plan and that lives as long as the plan (e.g. an
// irregular plan's block list uploaded to one GPU). The type layer only stores
// it; packers define what it is.
struct PlanAttachment {
  virtual ~PlanAttachment() = default;
};

class AttachmentSlots {
 public:
  // The attachment under `key`, made by `make` on first use (thread-safe).
  PlanAttachment* get_or_make(int key, const std::function<std::unique_ptr<PlanAttachment>()>& make);

 private:
  std::mutex mu_;
  std::vector<std::pair<int, std::unique_ptr<PlanAttachment>>> items_;
};

struct PackPlan {
  int64_t size = 0;    // packed bytes of one element (MPI_Type_size)
  int64_t lb = 0;      // MPI lb and extent: where element k+1 starts
  int64_t extent = 0;
  int64_t first_byte = 0;  // lowest offset one element touches (locates the buffer's memory)
  std::variant<StridedPlan, IrregularPlan> layout;
  std::shared_ptr<AttachmentSlots> attachments = std::make_shared<AttachmentSlots>();

  bool is_strided() const { return layout.index() == 0; }
  const StridedPlan& strided() const { return std::get<0>(layout); }
  const IrregularPlan& irregular() const { return std::get<1>(layout); }
  // `count` elements of a strided plan as one StridedPlan (elements `extent`
  // apart); false if that needs more than kMaxDims dims.
  bool strided_for_count(int64_t count, StridedPlan& out) const;
  // True when `count` elements are one contiguous run of bytes; `offset`:
  // where it starts relative to the buffer.
  bool contiguous_for_count(int64_t count, int64_t& offset) const {
    StridedPlan whole;
    if (!is_strided() || !strided_for_count(count, whole) || whole.ndims != 0) return false;
    offset = whole.offset;
    return true;
  }
};

// Bytes [first, first + bytes) of the packed stream of `count` elements
// (bytes < 0: to its end): a chunk of a message packed or unpacked on its own.
struct PackedRange {
  int64_t first = 0;
  int64_t bytes = -1;
  // one past the range's last byte in a stream of `total` bytes
  int64_t end_in(int64_t total) const { return bytes < 0 ? total : first + bytes; }
};

// First and one-past-last byte offset the plan touches (for one element);
// {0, 0} when it touches none.
struct Bounds {
  int64_t lo, hi;
};
Bounds touched_bounds(const PackPlan& plan);

// Compiles a canonical IR into a plan (size/lb/extent are filled by the caller).
Result<PackPlan> compile_plan(const TypeIR& canonical);
std::string describe(const PackPlan& plan);

}  // namespace dtmpi::type
