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

Result<PackPlan> PackPlan::for_count(int64_t count) const {
  PackPlan p = *this;
  if (count == 1) return p;
  if (count == 0) {
    p.layout = StridedPlan{};
    return p;
  }
  bool ok;
  if (p.is_strided()) {
    auto& s = std::get<0>(p.layout);
    if (s.block == 0) return p;
    ok = s.repeat(count, extent);
  } else {
    auto& outer = std::get<1>(p.layout).outer;
    ok = outer.ndims < kMaxDims;
    if (ok) outer.dims[outer.ndims++] = Dim{count, extent};
  }
  if (!ok) return Error{kErrTooLarge, "too many dims for count"};
  return p;
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

Status flatten(const TypeIR& n, int64_t base, std::vector<StridedPlan>& out) {
  StridedPlan sp;
  bool too_deep = false;
  const TypeIR* end = strided_chain(n, sp, too_deep);
  if (too_deep) return Error{kErrTooLarge, "plan deeper than kMaxDims"};
  if (end->kind == Kind::Dense) {
    sp.offset += base;
    if (!out.empty() && out.back().ndims == 0 && sp.ndims == 0 &&
        out.back().offset + out.back().block == sp.offset) {
      out.back().block += sp.block;
    } else {
      out.push_back(sp);
    }
    if (static_cast<int64_t>(out.size()) > kMaxPieces)
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
  DTMPI_TRY(flatten(*end, 0, ip.pieces));
  int64_t at = 0;
  ip.piece_start.reserve(ip.pieces.size());
  for (const auto& p : ip.pieces) {
    ip.piece_start.push_back(at);
    at += p.bytes();
  }
  ip.body_bytes = at;
  if (ip.pieces.size() == 1) {  // one piece under a chain: strided after all
    StridedPlan s = ip.pieces.front();
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
    if (p.bytes() == 0) continue;
    Bounds b = strided_bounds(p);
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
      os << " (";
      describe_strided(os, ip.pieces[i]);
      os << ")";
    }
    if (shown < ip.pieces.size()) os << " ...";
    os << "}";
  }
  return os.str();
}

}  // namespace dtmpi::type
