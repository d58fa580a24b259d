#include "type/plan_wire.hpp"

#include <mpi.h>

#include <cstring>

namespace dtmpi::type {
namespace {

constexpr uint8_t kStridedTag = 0x53;    // 'S'
constexpr uint8_t kIrregularTag = 0x49;  // 'I'

void put64(std::vector<unsigned char>& out, int64_t v) {
  unsigned char b[8];
  std::memcpy(b, &v, 8);
  out.insert(out.end(), b, b + 8);
}

void put_strided(std::vector<unsigned char>& out, const StridedPlan& s) {
  put64(out, s.offset);
  put64(out, s.block);
  put64(out, s.ndims);
  for (int d = 0; d < s.ndims; ++d) {
    put64(out, s.dims[d].count);
    put64(out, s.dims[d].stride);
  }
}

// Bounds-checked reader: every read fails cleanly past the end.
struct Reader {
  const unsigned char* data;
  size_t end;
  size_t pos;
  bool ok = true;
  int64_t i64() {
    if (!ok || end - pos < 8 || pos > end) {
      ok = false;
      return 0;
    }
    int64_t v;
    std::memcpy(&v, data + pos, 8);
    pos += 8;
    return v;
  }
  uint8_t u8() {
    if (!ok || pos >= end) {
      ok = false;
      return 0;
    }
    return data[pos++];
  }
  // A count read from the wire, refused when it cannot fit in what is left.
  int64_t count(int64_t bytes_each) {
    const int64_t n = i64();
    if (n < 0 || (bytes_each > 0 && n > static_cast<int64_t>((end - pos) / static_cast<size_t>(bytes_each)))) ok = false;
    return ok ? n : 0;
  }
  StridedPlan strided() {
    StridedPlan s;
    s.offset = i64();
    s.block = i64();
    const int64_t nd = i64();
    if (nd < 0 || nd > kMaxDims) {
      ok = false;
      return s;
    }
    s.ndims = static_cast<int>(nd);
    for (int d = 0; d < s.ndims; ++d) {
      s.dims[d].count = i64();
      s.dims[d].stride = i64();
    }
    return s;
  }
};

}  // namespace

void encode_plan(const PackPlan& plan, std::vector<unsigned char>& out) {
  out.push_back(plan.is_strided() ? kStridedTag : kIrregularTag);
  put64(out, plan.size);
  put64(out, plan.lb);
  put64(out, plan.extent);
  put64(out, plan.first_byte);
  if (plan.is_strided()) {
    put_strided(out, plan.strided());
    return;
  }
  const IrregularPlan& ir = plan.irregular();
  put_strided(out, ir.outer);
  put64(out, static_cast<int64_t>(ir.pieces.size()));
  for (const Piece& p : ir.pieces) {
    put64(out, p.offset);
    put64(out, p.block);
    put64(out, p.strided);
  }
  put64(out, static_cast<int64_t>(ir.strided.size()));
  for (const StridedPlan& s : ir.strided) put_strided(out, s);
  put64(out, static_cast<int64_t>(ir.piece_start.size()));
  for (int64_t v : ir.piece_start) put64(out, v);
  put64(out, ir.body_bytes);
  put64(out, static_cast<int64_t>(ir.word_blocks.size()));
  for (int64_t v : ir.word_blocks) put64(out, v);
}

Result<PackPlan> decode_plan(const unsigned char* data, size_t end, size_t* pos) {
  Reader r{data, end, *pos};
  const uint8_t tag = r.u8();
  PackPlan plan;
  plan.size = r.i64();
  plan.lb = r.i64();
  plan.extent = r.i64();
  plan.first_byte = r.i64();
  if (tag == kStridedTag) {
    plan.layout = r.strided();
  } else if (tag == kIrregularTag) {
    IrregularPlan ir;
    ir.outer = r.strided();
    const int64_t np = r.count(24);
    ir.pieces.resize(static_cast<size_t>(np));
    for (Piece& p : ir.pieces) {
      p.offset = r.i64();
      p.block = r.i64();
      p.strided = static_cast<int32_t>(r.i64());
    }
    const int64_t ns = r.count(24);
    ir.strided.resize(static_cast<size_t>(ns));
    for (StridedPlan& s : ir.strided) s = r.strided();
    for (const Piece& p : ir.pieces)
      if (p.strided < -1 || p.strided >= ns) r.ok = false;
    const int64_t nstart = r.count(8);
    ir.piece_start.resize(static_cast<size_t>(nstart));
    for (int64_t& v : ir.piece_start) v = r.i64();
    ir.body_bytes = r.i64();
    const int64_t nw = r.count(8);
    ir.word_blocks.resize(static_cast<size_t>(nw));
    for (int64_t& v : ir.word_blocks) v = r.i64();
    plan.layout = std::move(ir);
  } else {
    r.ok = false;
  }
  if (!r.ok || plan.size < 0) return Error{MPI_ERR_INTERN, "malformed datatype plan from a peer"};
  *pos = r.pos;
  return plan;
}

}  // namespace dtmpi::type
