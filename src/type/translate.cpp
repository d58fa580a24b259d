#include "type/translate.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "base/system_mpi.hpp"
#include "type/canonicalize.hpp"
#include "type/introspect.hpp"

namespace dtmpi::type {
namespace {

constexpr int64_t kMaxNodes = int64_t{1} << 22;

struct Extent {
  int64_t lb, extent;
};

Result<Extent> extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, ext = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_extent)(t, &lb, &ext));
  return Extent{lb, ext};
}

// a * b, or an error where it leaves 64 bits (counts and displacements of
// large-count types can be anything the MPI accepted; such a type stays with it)
Result<int64_t> mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return Error{kErrTooLarge, "byte offset beyond 64 bits"};
  return r;
}

template <class A, class B>
int64_t member_offset() {
  struct Pair {
    A a;
    B b;
  };
  return static_cast<int64_t>(offsetof(Pair, b));
}

// Predefined types: contiguous, except the pair types of MINLOC/MAXLOC.
Result<TypeIR> named_ir(MPI_Datatype t) {
  MPI_Count size = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_size_x)(t, &size));
  auto ext = extent_of(t);
  if (!ext) return ext.error();
  const Extent e = ext.value();
  if (e.lb == 0 && e.extent == size) return TypeIR::dense(0, size);
  struct PairType {
    MPI_Datatype type;
    int64_t first, second_off, second;
  };
  const PairType pairs[] = {
      {MPI_FLOAT_INT, sizeof(float), member_offset<float, int>(), sizeof(int)},
      {MPI_DOUBLE_INT, sizeof(double), member_offset<double, int>(), sizeof(int)},
      {MPI_LONG_INT, sizeof(long), member_offset<long, int>(), sizeof(int)},
      {MPI_SHORT_INT, sizeof(short), member_offset<short, int>(), sizeof(int)},
      {MPI_2INT, sizeof(int), member_offset<int, int>(), sizeof(int)},
      {MPI_LONG_DOUBLE_INT, sizeof(long double), member_offset<long double, int>(), sizeof(int)},
  };
  for (const auto& p : pairs) {
    if (p.type == t && p.first + p.second == size) {
      std::vector<TypeIR> items;
      items.push_back(TypeIR::dense(0, p.first));
      items.push_back(TypeIR::dense(p.second_off, p.second));
      return TypeIR::seq(std::move(items));
    }
  }
  return Error{kErrUnsupported, "named type with holes"};
}

// `count` runs of `len` indices, the first at `start`, `step` apart: what one
// grid coordinate owns of one darray dimension, in ascending order.
struct Runs {
  int64_t start, len, count, step;
};

// A dimension's indices owned by grid coordinate r: one run (block, none), or
// for cyclic(k) the whole runs at a constant step plus a shorter last one.
// Described as groups, never run by run: a cyclic dimension of n indices has
// n/(p*k) runs, and listing them made committing cyclic darrays cost up to 20
// times the system MPI's commit (bench/results/commit-cost-*).
Result<std::vector<Runs>> darray_runs(int64_t g, int64_t distrib, int64_t darg, int64_t p, int64_t r) {
  std::vector<Runs> runs;
  if (distrib == MPI_DISTRIBUTE_NONE) {
    if (g > 0) runs.push_back({0, g, 1, 0});
    return runs;
  }
  if (distrib == MPI_DISTRIBUTE_BLOCK) {
    const int64_t d = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
    const int64_t s = r * d;
    if (s < g) runs.push_back({s, std::min(d, g - s), 1, 0});
    return runs;
  }
  if (distrib == MPI_DISTRIBUTE_CYCLIC) {
    const int64_t k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    if (k <= 0) return Error{kErrUnsupported, "darray cyclic darg"};
    const int64_t first = r * k, step = p * k;
    if (first >= g) return runs;
    const int64_t n = (g - first + step - 1) / step;  // runs, the last maybe short
    const int64_t last = first + (n - 1) * step;
    const int64_t whole = g - last >= k ? n : n - 1;
    if (whole > 0) runs.push_back({first, k, whole, step});
    if (whole < n) runs.push_back({last, g - last, 1, 0});
    return runs;
  }
  return Error{kErrUnsupported, "darray distribution"};
}

class Translator {
 public:
  Result<TypeIR> run(MPI_Datatype t, int depth) {
    if (depth > 64) return Error{kErrTooLarge, "nesting deeper than 64"};
    auto c = contents_of(t);
    if (!c) return c.error();
    if (c.value().combiner == MPI_COMBINER_NAMED) return named_ir(t);
    return from_contents(c.value().combiner, c.value().ints, c.value().addrs, c.value().types, depth);
  }

 private:
  int64_t nodes_ = 0;

  Status charge(int64_t n) {
    nodes_ += n;
    if (nodes_ > kMaxNodes) return Error{kErrTooLarge, "type has too many blocks"};
    return ok_status();
  }

  // `n` blocks of `bl` elements of the old type at byte displacements.
  Result<TypeIR> blocks(MPI_Datatype old, int depth, const std::vector<int64_t>& bls,
                        const std::vector<int64_t>& disp_bytes) {
    auto child = run(old, depth + 1);
    if (!child) return child.error();
    auto old_ext = extent_of(old);
    if (!old_ext) return old_ext.error();
    const int64_t ext = old_ext.value().extent;
    DTMPI_TRY(charge(static_cast<int64_t>(bls.size()) * (1 + node_count(child.value()))));
    std::vector<TypeIR> items;
    items.reserve(bls.size());
    for (size_t i = 0; i < bls.size(); ++i)
      items.push_back(TypeIR::stream(disp_bytes[i], bls[i], ext, child.value()));
    return TypeIR::seq(std::move(items));
  }

  Result<TypeIR> from_contents(int comb, const std::vector<int64_t>& in, const std::vector<int64_t>& ad,
                               const std::vector<MPI_Datatype>& ty, int depth) {
    switch (comb) {
      case MPI_COMBINER_DUP:
      case MPI_COMBINER_RESIZED:  // resizing moves lb/extent, not the data
        return run(ty[0], depth + 1);
      case MPI_COMBINER_CONTIGUOUS: {
        auto c = run(ty[0], depth + 1);
        if (!c) return c;
        auto e = extent_of(ty[0]);
        if (!e) return e.error();
        return TypeIR::stream(0, in[0], e.value().extent, std::move(c.value()));
      }
      case MPI_COMBINER_VECTOR:
      case MPI_COMBINER_HVECTOR: {
        auto c = run(ty[0], depth + 1);
        if (!c) return c;
        auto e = extent_of(ty[0]);
        if (!e) return e.error();
        const int64_t ext = e.value().extent;
        auto stride = comb == MPI_COMBINER_VECTOR ? mul(in[2], ext) : Result<int64_t>(ad[0]);
        if (!stride) return stride.error();
        return TypeIR::stream(0, in[0], stride.value(), TypeIR::stream(0, in[1], ext, std::move(c.value())));
      }
      case MPI_COMBINER_INDEXED:
      case MPI_COMBINER_HINDEXED:
      case MPI_COMBINER_INDEXED_BLOCK:
      case MPI_COMBINER_HINDEXED_BLOCK: {
        const int64_t n = in[0];
        const bool uniform = comb == MPI_COMBINER_INDEXED_BLOCK || comb == MPI_COMBINER_HINDEXED_BLOCK;
        const bool bytes = comb == MPI_COMBINER_HINDEXED || comb == MPI_COMBINER_HINDEXED_BLOCK;
        auto e = extent_of(ty[0]);
        if (!e) return e.error();
        const int64_t ext = e.value().extent;
        std::vector<int64_t> bl(static_cast<size_t>(n)), disp(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          bl[i] = uniform ? in[1] : in[1 + i];
          if (bytes) {
            disp[i] = ad[i];
          } else {
            auto d = mul(in[(uniform ? 2 : 1 + n) + i], ext);
            if (!d) return d.error();
            disp[i] = d.value();
          }
        }
        return blocks(ty[0], depth, bl, disp);
      }
      case MPI_COMBINER_STRUCT: {
        const int64_t n = in[0];
        DTMPI_TRY(charge(n));
        std::vector<TypeIR> items;
        for (int64_t i = 0; i < n; ++i) {
          auto c = run(ty[i], depth + 1);
          if (!c) return c;
          auto e = extent_of(ty[i]);
          if (!e) return e.error();
          items.push_back(TypeIR::stream(ad[i], in[1 + i], e.value().extent, std::move(c.value())));
        }
        return TypeIR::seq(std::move(items));
      }
      case MPI_COMBINER_SUBARRAY: {
        const int64_t nd = in[0];
        const int64_t order = in[1 + 3 * nd];
        auto node = run(ty[0], depth + 1);
        if (!node) return node;
        auto e = extent_of(ty[0]);
        if (!e) return e.error();
        int64_t stride = e.value().extent;
        TypeIR cur = std::move(node.value());
        // build from the fastest dimension outwards
        for (int64_t k = 0; k < nd; ++k) {
          const int64_t i = order == MPI_ORDER_C ? nd - 1 - k : k;
          const int64_t size = in[1 + i], sub = in[1 + nd + i], start = in[1 + 2 * nd + i];
          auto off = mul(start, stride);
          if (!off) return off.error();
          cur = TypeIR::stream(off.value(), sub, stride, std::move(cur));
          auto next = mul(stride, size);
          if (!next) return next.error();
          stride = next.value();
        }
        return cur;
      }
      case MPI_COMBINER_DARRAY:
        return darray(in, ty[0], depth);
      default:
        break;
    }
    // F90 parameterized types behave as named types
#ifdef MPI_COMBINER_F90_REAL
    if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
        comb == MPI_COMBINER_F90_INTEGER)
      return Error{kErrUnsupported, "F90 parameterized type"};
#endif
    return Error{kErrUnsupported, "unsupported combiner"};
  }

  Result<TypeIR> darray(const std::vector<int64_t>& in, MPI_Datatype old, int depth) {
    const int64_t rank = in[1], nd = in[2];
    const int64_t* gsizes = &in[3];
    const int64_t* distribs = &in[3 + nd];
    const int64_t* dargs = &in[3 + 2 * nd];
    const int64_t* psizes = &in[3 + 3 * nd];
    const int64_t order = in[3 + 4 * nd];
    // process grid coordinates are row-major whatever the array order
    std::vector<int64_t> coord(static_cast<size_t>(nd));
    for (int64_t i = nd - 1, r = rank; i >= 0; --i) {
      coord[i] = r % psizes[i];
      r /= psizes[i];
    }
    auto node = run(old, depth + 1);
    if (!node) return node;
    auto e = extent_of(old);
    if (!e) return e.error();
    int64_t stride = e.value().extent;
    TypeIR cur = std::move(node.value());
    for (int64_t k = 0; k < nd; ++k) {
      const int64_t i = order == MPI_ORDER_C ? nd - 1 - k : k;
      auto runs = darray_runs(gsizes[i], distribs[i], dargs[i], psizes[i], coord[i]);
      if (!runs) return runs.error();
      DTMPI_TRY(charge(static_cast<int64_t>(runs.value().size()) * (2 + node_count(cur))));
      DTMPI_TRY(mul(gsizes[i], stride));  // the largest offset below
      std::vector<TypeIR> items;
      for (const auto& r : runs.value()) {
        if (r.count == 1)
          items.push_back(TypeIR::stream(r.start * stride, r.len, stride, cur));
        else  // (r.step < g when there are two runs or more: no overflow)
          items.push_back(
              TypeIR::stream(r.start * stride, r.count, r.step * stride, TypeIR::stream(0, r.len, stride, cur)));
      }
      cur = canonicalize(TypeIR::seq(std::move(items)));  // keeps the tree small
      stride *= gsizes[i];
    }
    return cur;
  }
};

}  // namespace

Result<TypeIR> translate(MPI_Datatype t) {
  Translator tr;
  return tr.run(t, 0);
}

Result<PlanBuild> build_plan(MPI_Datatype t) {
  PlanBuild b;
  auto raw = translate(t);
  if (!raw) return raw.error();
  b.raw = std::move(raw.value());
  b.canonical = canonicalize(b.raw);
  auto plan = compile_plan(b.canonical);
  if (!plan) return plan.error();
  b.plan = std::move(plan.value());
  MPI_Count size = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_size_x)(t, &size));
  auto ext = extent_of(t);
  if (!ext) return ext.error();
  const Extent e = ext.value();
  b.plan.size = size;
  b.plan.lb = e.lb;
  b.plan.extent = e.extent;
  // Safety net: a plan that disagrees with MPI on the size is never used.
  if (packed_size(b.canonical) != size) return Error{kErrUnsupported, "size mismatch with MPI"};
  // ... and on the bytes touched: they must lie within MPI's true extent.
  // (MPI's may be wider: MPICH counts the bounds of empty members.) Where an
  // MPI library places the typemap elsewhere than the standard does (Open MPI
  // 4.1 for some overlapping negative-stride hvectors), the system MPI keeps
  // the type, so dtmpi and the system MPI never disagree on bytes.
  const Bounds tb = touched_bounds(b.plan);
  b.plan.first_byte = tb.lo;
  if (size > 0) {
    MPI_Count tlb = 0, text = 0;
    DTMPI_MPI_CHECK(REAL(MPI_Type_get_true_extent_x)(t, &tlb, &text));
    if (tb.lo < tlb || tb.hi > tlb + text)
      return Error{kErrUnsupported, "typemap bounds differ from the MPI library's true extent"};
  }
  return b;
}

}  // namespace dtmpi::type
