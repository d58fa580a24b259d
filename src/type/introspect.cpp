#include "type/introspect.hpp"
#include "base/system_mpi.hpp"

#include <cstddef>

namespace dtmpi::type {
namespace {

#ifdef DTMPI_HAVE_MPI_LARGE_COUNT
// Reads array_of_large_counts with bounds checks: an MPI whose layout differs
// from the standard's leaves the type unplanned instead of reading past the end.
class LargeCounts {
 public:
  explicit LargeCounts(const std::vector<MPI_Count>& v) : v_(v) {}
  bool has(size_t n) const { return v_.size() >= n; }
  // appends v[first, first + n) to out
  void take(size_t first, size_t n, std::vector<int64_t>& out) const {
    out.insert(out.end(), v_.begin() + static_cast<ptrdiff_t>(first),
               v_.begin() + static_cast<ptrdiff_t>(first + n));
  }
  int64_t operator[](size_t i) const { return v_[i]; }

 private:
  const std::vector<MPI_Count>& v_;
};

// MPI-4.0 section 5.1.13: for the large-count constructors every count and
// displacement is in array_of_large_counts, and array_of_integers keeps only
// what never needs 64 bits (subarray: ndims, order; darray: everything but
// the global sizes). Rebuilds the classic layout from them.
Status widen_large(const std::vector<int>& in, const std::vector<MPI_Count>& large_in, Contents& c) {
  const LargeCounts lc(large_in);
  const Error bad{kErrUnsupported, "unexpected large-count contents layout"};
  auto count_then = [&](size_t n_ints) -> Status {  // {count, n_ints - 1 more} ints, the rest addrs
    if (!lc.has(n_ints)) return bad;
    lc.take(0, n_ints, c.ints);
    lc.take(n_ints, large_in.size() - n_ints, c.addrs);
    return ok_status();
  };
  switch (c.combiner) {
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:  // all integers in the classic layout too
      lc.take(0, large_in.size(), c.ints);
      return ok_status();
    case MPI_COMBINER_HVECTOR:  // count, blocklength | stride
    case MPI_COMBINER_HINDEXED_BLOCK:  // count, blocklength | displacements
      return count_then(2);
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT: {  // count, blocklengths | displacements
      if (!lc.has(1) || lc[0] < 0) return bad;
      return count_then(static_cast<size_t>(lc[0]) + 1);
    }
    case MPI_COMBINER_SUBARRAY: {  // ints {ndims, order}, large {sizes, subsizes, starts}
      if (in.size() < 2 || in[0] < 0 || !lc.has(3 * static_cast<size_t>(in[0]))) return bad;
      c.ints.push_back(in[0]);
      lc.take(0, 3 * static_cast<size_t>(in[0]), c.ints);
      c.ints.push_back(in[1]);
      return ok_status();
    }
    case MPI_COMBINER_DARRAY: {
      // ints {size, rank, ndims, distribs, dargs, psizes, order}, large {gsizes}
      if (in.size() < 3 || in[2] < 0) return bad;
      const size_t nd = static_cast<size_t>(in[2]);
      if (in.size() < 4 + 3 * nd || !lc.has(nd)) return bad;
      c.ints.insert(c.ints.end(), in.begin(), in.begin() + 3);
      lc.take(0, nd, c.ints);
      c.ints.insert(c.ints.end(), in.begin() + 3, in.begin() + static_cast<ptrdiff_t>(4 + 3 * nd));
      return ok_status();
    }
    case MPI_COMBINER_RESIZED:  // lb, extent
      lc.take(0, large_in.size(), c.addrs);
      return ok_status();
    default:
      return bad;
  }
}
#endif

}  // namespace

Contents::~Contents() {
  for (auto& t : types)
    if (t != MPI_DATATYPE_NULL && !is_predefined(t)) REAL(MPI_Type_free)(&t);
}

Result<int> combiner_of(MPI_Datatype t) {
#ifdef DTMPI_HAVE_MPI_LARGE_COUNT
  MPI_Count ni = 0, na = 0, nc = 0, nd = 0;
  int comb = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_envelope_c)(t, &ni, &na, &nc, &nd, &comb));
#else
  int ni = 0, na = 0, nd = 0, comb = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_envelope)(t, &ni, &na, &nd, &comb));
#endif
  return comb;
}

bool is_predefined(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return false;
  auto c = combiner_of(t);
  return c && c.value() == MPI_COMBINER_NAMED;
}

Result<Contents> contents_of(MPI_Datatype t) {
  Contents c;
#ifdef DTMPI_HAVE_MPI_LARGE_COUNT
  MPI_Count ni = 0, na = 0, nc = 0, nd = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_envelope_c)(t, &ni, &na, &nc, &nd, &c.combiner));
  if (c.combiner == MPI_COMBINER_NAMED) return c;
  std::vector<int> in(static_cast<size_t>(ni));
  std::vector<MPI_Aint> ad(static_cast<size_t>(na));
  std::vector<MPI_Count> lc(static_cast<size_t>(nc));
  c.types.assign(static_cast<size_t>(nd), MPI_DATATYPE_NULL);
  DTMPI_MPI_CHECK(
      REAL(MPI_Type_get_contents_c)(t, ni, na, nc, nd, in.data(), ad.data(), lc.data(), c.types.data()));
  if (nc > 0) {  // built by a large-count constructor
    DTMPI_TRY(widen_large(in, lc, c));
    return c;
  }
#else
  int ni = 0, na = 0, nd = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_envelope)(t, &ni, &na, &nd, &c.combiner));
  if (c.combiner == MPI_COMBINER_NAMED) return c;
  std::vector<int> in(static_cast<size_t>(ni));
  std::vector<MPI_Aint> ad(static_cast<size_t>(na));
  c.types.assign(static_cast<size_t>(nd), MPI_DATATYPE_NULL);
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_contents)(t, ni, na, nd, in.data(), ad.data(), c.types.data()));
#endif
  c.ints.assign(in.begin(), in.end());
  c.addrs.assign(ad.begin(), ad.end());
  return c;
}

Result<int64_t> size_of(MPI_Datatype t) {
  MPI_Count size = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_size_x)(t, &size));
  return static_cast<int64_t>(size);
}

}  // namespace dtmpi::type
