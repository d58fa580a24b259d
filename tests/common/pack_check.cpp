#include "pack_check.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "pack/cpu_pack.hpp"
#include "random_types.hpp"
#include "type/translate.hpp"

namespace dtmpi::testing {

PackCheck check_against_mpi(MPI_Datatype t, int count, std::mt19937_64& rng) {
  PackCheck r;
  auto built = type::build_plan(t);
  if (!built) {
    r.plan_text = built.error().what;
    return r;
  }
  r.planned = true;
  r.plan_text = type::describe(built.value().plan);
  const type::PackPlan& plan = built.value().plan;
  int size = 0;
  MPI_Type_size(t, &size);
  const int64_t bytes = int64_t{size} * count;
  if (bytes == 0) {  // nothing to pack (and MPICH 4.0 crashes packing some empty types)
    if (size == 0 && (plan.is_strided() ? plan.strided().bytes() != 0 : plan.irregular().bytes() != 0))
      r.mismatch = "empty type with a non-empty plan";
    return r;
  }
  const Span s = span_of(t, count);
  constexpr int64_t kMargin = 64;
  const int64_t n = s.hi - s.lo + 2 * kMargin;
  std::vector<unsigned char> src(static_cast<size_t>(n));
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  unsigned char* base = src.data() + kMargin - s.lo;

  std::vector<unsigned char> want(static_cast<size_t>(bytes) + 1), got(static_cast<size_t>(bytes) + 1, 0);
  int pos = 0;
  PMPI_Pack(base, count, t, want.data(), static_cast<int>(bytes), &pos, MPI_COMM_SELF);
  MPI_Aint lb = 0, ext = 0;
  MPI_Type_get_extent(t, &lb, &ext);
  if (count > 1) {
    std::vector<unsigned char> each(want.size());
    pos = 0;
    for (int k = 0; k < count; ++k)
      PMPI_Pack(base + k * ext, 1, t, each.data(), static_cast<int>(bytes), &pos, MPI_COMM_SELF);
    if (each != want) {
      r.system_inconsistent = true;
      want = each;
    }
  }
  pack::pack_host(plan, count, base, got.data());
  if (std::memcmp(want.data(), got.data(), static_cast<size_t>(bytes)) != 0) {
    int64_t i = 0;
    while (want[i] == got[i]) ++i;
    r.mismatch = "pack differs at packed byte " + std::to_string(i) + " of " + std::to_string(bytes);
    return r;
  }
  // unpack only where the typemap touches no byte twice (else MPI leaves the
  // result undefined)
  auto offs = typemap_offsets(t, count);
  std::sort(offs.begin(), offs.end());
  // (empty types are skipped: MPICH 4.0's MPI_Unpack divides by zero on some)
  if (offs.empty() || std::adjacent_find(offs.begin(), offs.end()) != offs.end()) return r;
  std::vector<unsigned char> a(static_cast<size_t>(n)), b;
  for (auto& x : a) x = static_cast<unsigned char>(0xA5 ^ rng());
  b = a;
  pos = 0;
  if (r.system_inconsistent) {
    for (int k = 0; k < count; ++k)
      PMPI_Unpack(want.data(), static_cast<int>(bytes), &pos, a.data() + kMargin - s.lo + k * ext, 1, t,
                  MPI_COMM_SELF);
  } else {
    PMPI_Unpack(want.data(), static_cast<int>(bytes), &pos, a.data() + kMargin - s.lo, count, t,
                MPI_COMM_SELF);
  }
  pack::unpack_host(plan, count, want.data(), b.data() + kMargin - s.lo);
  if (a != b) {
    int64_t i = 0;
    while (a[i] == b[i]) ++i;
    r.mismatch = "unpack differs at buffer byte " + std::to_string(i - kMargin + s.lo);
  }
  return r;
}

}  // namespace dtmpi::testing
