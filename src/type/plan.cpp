#include "type/plan.hpp"

#include <algorithm>
#include <sstream>

namespace dtmpi::type {

int64_t StridedPlan::blocks() const {
  if (block == 0) return 0;
  int64_t n = 1;
  for (int d = 0; d < ndims; ++d) n *= dims[d].count;
  return n;
}

bool StridedPlan::repeat(int64_t count, int64_t stride) {
  if (count == 1) return true;
  if (ndims == 0 && block == stride) {
    block *= count;
    return true;
  }
  if (ndims > 0 && dims[ndims - 1].count * dims[ndims - 1].stride == stride) {
    dims[ndims - 1].count *= count;
    return true;
  }
  if (ndims == kMaxDims) return false;
  dims[ndims++] = Dim{count, stride};
  return true;
}

int64_t IrregularPlan::outer_count() const {
  int64_t n = 1;
  for (int d = 0; d < outer.ndims; ++d) n *= outer.dims[d].count;
  return n;
}

PlanAttachment* AttachmentSlots::get_or_make(
    int key, const std::function<std::unique_ptr<PlanAttachment>()>& make) {
  std::lock_guard lock(mu_);
  for (auto& [k, a] : items_)
    if (k == key) return a.get();
  auto a = make();
  PlanAttachment* raw = a.get();
  if (raw) items_.emplace_back(key, std::move(a));
  return raw;
}

bool PackPlan::strided_for_count(int64_t count, StridedPlan& out) const {
  const StridedPlan& s = strided();
  out.offset = s.offset;  // copy only the dims in use: this is on the hot path
  out.block = s.block;
  out.ndims = s.ndims;
  for (int d = 0; d < s.ndims; ++d) out.dims[d] = s.dims[d];
  if (count == 0) {
    out = StridedPlan{};
    return true;
  }
  if (out.block == 0) return true;
  return out.repeat(count, extent);
}

namespace {

using Kind = TypeIR::Kind;

// Follows a chain of Streams from `n`; fills dims (inner first) and offset.
// Returns the node that ends the chain (Dense or Seq).
const TypeIR* strided_chain(const TypeIR& n, StridedPlan& sp, bool& too_deep) {
  const TypeIR* cur = &n;
  std::vector<Dim> outer_first;
  int64_t off = 0;
  while (cur->kind == Kind::Stream) {
    off += cur->off;
    outer_first.push_back(Dim{cur->count, cur->stride});
    cur = &cur->child();
  }
  off += cur->off;
  too_deep = outer_first.size() > static_cast<size_t>(kMaxDims);
  sp.offset = off;
  sp.ndims = 0;
  if (!too_deep)
    for (auto it = outer_first.rbegin(); it != outer_first.rend(); ++it) sp.dims[sp.ndims++] = *it;
  if (cur->kind == Kind::Dense) sp.block = cur->len;
  return cur;
}

struct PieceList {
  std::vector<Piece> pieces;
  std::vector<StridedPlan> strided;
};

Status flatten(const TypeIR& n, int64_t base, PieceList& out) {
  StridedPlan sp;
  bool too_deep = false;
  const TypeIR* end = strided_chain(n, sp, too_deep);
  if (too_deep) return Error{kErrTooLarge, "plan deeper than kMaxDims"};
  if (end->kind == Kind::Dense) {
    sp.offset += base;
    auto& ps = out.pieces;
    if (sp.ndims == 0) {
      if (!ps.empty() && ps.back().strided < 0 && ps.back().offset + ps.back().block == sp.offset)
        ps.back().block += sp.block;  // touching blocks merge
      else
        ps.push_back(Piece{sp.offset, sp.block, -1});
    } else {
      ps.push_back(Piece{sp.offset, sp.block, static_cast<int32_t>(out.strided.size())});
      out.strided.push_back(sp);
    }
    if (static_cast<int64_t>(ps.size()) > kMaxPieces)
      return Error{kErrTooLarge, "irregular plan has too many pieces"};
    return ok_status();
  }
  // The chain ends in a Seq: expand the chain (its order is outer-major) and
  // flatten the Seq at every position.
  const int64_t at = base + n.off;
  if (n.kind == Kind::Stream) {
    for (int64_t i = 0; i < n.count; ++i) DTMPI_TRY(flatten(n.child(), at + i * n.stride, out));
    return ok_status();
  }
  for (const auto& c : n.children) DTMPI_TRY(flatten(c, at, out));
  return ok_status();
}

}  // namespace

Result<PackPlan> compile_plan(const TypeIR& canonical) {
  PackPlan plan;
  if (canonical.is_empty()) {
    plan.layout = StridedPlan{};
    return plan;
  }
  StridedPlan chain;
  bool too_deep = false;
  const TypeIR* end = strided_chain(canonical, chain, too_deep);
  if (too_deep) return Error{kErrTooLarge, "plan deeper than kMaxDims"};
  if (end->kind == Kind::Dense) {
    plan.layout = chain;
    return plan;
  }
  IrregularPlan ip;
  ip.outer = chain;
  ip.outer.offset = chain.offset - end->off;  // the Seq's own offset goes to the pieces
  ip.outer.block = 0;
  PieceList list;
  DTMPI_TRY(flatten(*end, 0, list));
  ip.pieces = std::move(list.pieces);
  ip.strided = std::move(list.strided);
  int64_t at = 0;
  ip.piece_start.reserve(ip.pieces.size());
  for (const auto& p : ip.pieces) {
    ip.piece_start.push_back(at);
    at += ip.piece_bytes(p);
  }
  ip.body_bytes = at;
  bool words = ip.strided.empty();
  constexpr int64_t kMaxOff = int64_t{1} << 47;
  for (const auto& p : ip.pieces)
    words = words && p.block % 8 == 0 && p.block / 8 < 65536 && p.offset < kMaxOff && p.offset > -kMaxOff;
  if (words) {
    ip.word_blocks.reserve(ip.pieces.size());
    for (const auto& p : ip.pieces) ip.word_blocks.push_back(p.offset * 65536 + p.block / 8);
  }
  if (ip.pieces.size() == 1) {  // one piece under a chain: strided after all
    const Piece& p = ip.pieces.front();
    StridedPlan s = p.strided < 0 ? StridedPlan{p.offset, p.block, 0, {}} : ip.strided.front();
    s.offset += ip.outer.offset;
    for (int d = 0; d < ip.outer.ndims; ++d)
      if (!s.repeat(ip.outer.dims[d].count, ip.outer.dims[d].stride))
        return Error{kErrTooLarge, "plan deeper than kMaxDims"};
    plan.layout = s;
    return plan;
  }
  plan.layout = std::move(ip);
  return plan;
}

namespace {
Bounds strided_bounds(const StridedPlan& s) {
  Bounds b{s.offset, s.offset + s.block};
  for (int d = 0; d < s.ndims; ++d) {
    const int64_t span = (s.dims[d].count - 1) * s.dims[d].stride;
    (span < 0 ? b.lo : b.hi) += span;
  }
  return b;
}
}  // namespace

Bounds touched_bounds(const PackPlan& plan) {
  if (plan.is_strided()) {
    if (plan.strided().bytes() == 0) return Bounds{0, 0};
    return strided_bounds(plan.strided());
  }
  const auto& ip = plan.irregular();
  bool any = false;
  Bounds body{0, 0};
  for (const auto& p : ip.pieces) {
    if (ip.piece_bytes(p) == 0) continue;
    Bounds b = p.strided < 0 ? Bounds{p.offset, p.offset + p.block}
                             : strided_bounds(ip.strided[static_cast<size_t>(p.strided)]);
    body = any ? Bounds{std::min(body.lo, b.lo), std::max(body.hi, b.hi)} : b;
    any = true;
  }
  if (!any) return Bounds{0, 0};
  StridedPlan o = ip.outer;  // the outer repetition moves the whole body
  o.block = body.hi - body.lo;
  o.offset += body.lo;
  return strided_bounds(o);
}

static void describe_strided(std::ostringstream& os, const StridedPlan& s) {
  os << "offset=" << s.offset << " block=" << s.block << " dims=[";
  for (int d = 0; d < s.ndims; ++d)
    os << (d ? ", " : "") << s.dims[d].count << "x" << s.dims[d].stride;
  os << "]";
}

std::string describe(const PackPlan& plan) {
  std::ostringstream os;
  os << "size=" << plan.size << " lb=" << plan.lb << " extent=" << plan.extent << " ";
  if (plan.is_strided()) {
    os << "Strided{";
    describe_strided(os, plan.strided());
    os << "}";
  } else {
    const auto& ip = plan.irregular();
    os << "Irregular{outer ";
    describe_strided(os, ip.outer);
    os << ", " << ip.pieces.size() << " pieces, " << ip.body_bytes << " B per body:";
    const size_t shown = ip.pieces.size() < 6 ? ip.pieces.size() : 6;
    for (size_t i = 0; i < shown; ++i) {
      const Piece& p = ip.pieces[i];
      os << " (";
      if (p.strided < 0)
        os << "offset=" << p.offset << " block=" << p.block;
      else
        describe_strided(os, ip.strided[static_cast<size_t>(p.strided)]);
      os << ")";
    }
    if (shown < ip.pieces.size()) os << " ...";
    os << "}";
  }
  return os.str();
}

}  // namespace dtmpi::type
