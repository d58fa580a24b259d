#include "rma/named.hpp"

#include <vector>

#include "type/introspect.hpp"

namespace dtmpi::rma {
namespace {

// Built at first use (the handles of some MPIs are only valid after MPI_Init).
const std::vector<MPI_Datatype>& types() {
  static const std::vector<MPI_Datatype> t = {
      MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
      MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE,
      MPI_LONG_DOUBLE, MPI_WCHAR, MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
      MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_C_FLOAT_COMPLEX,
      MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT,
      MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_LOGICAL, MPI_COMPLEX,
      MPI_DOUBLE_COMPLEX, MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER, MPI_CHARACTER};
  return t;
}

const std::vector<MPI_Op>& ops() {
  static const std::vector<MPI_Op> o = {MPI_MAX,  MPI_MIN,  MPI_SUM,    MPI_PROD,   MPI_LAND,
                                        MPI_BAND, MPI_LOR,  MPI_BOR,    MPI_LXOR,   MPI_BXOR,
                                        MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
  return o;
}

// Walks the constructor tree of `t`, collecting its predefined leaves into
// `found` (MPI_DATATYPE_NULL until the first); false on a second, other one.
Status collect(MPI_Datatype t, MPI_Datatype& found, int depth) {
  if (depth > 64) return Error{MPI_ERR_TYPE, "datatype nesting too deep for an accumulate"};
  auto c = type::contents_of(t);
  if (!c) return c.error();
  if (c.value().combiner == MPI_COMBINER_NAMED) {
    if (found == MPI_DATATYPE_NULL) found = t;
    else if (found != t)
      return Error{MPI_ERR_TYPE, "an accumulate's datatype mixes several predefined types"};
    return ok_status();
  }
  for (MPI_Datatype sub : c.value().types) DTMPI_TRY(collect(sub, found, depth + 1));
  return ok_status();
}

}  // namespace

Result<MPI_Datatype> element_type(MPI_Datatype t) {
  MPI_Datatype found = MPI_DATATYPE_NULL;
  DTMPI_TRY(collect(t, found, 0));
  if (found == MPI_DATATYPE_NULL || type_index(found) < 0)
    return Error{MPI_ERR_TYPE, "an accumulate's datatype is not built of one predefined type"};
  return found;
}

int type_index(MPI_Datatype t) {
  const auto& v = types();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == t && t != MPI_DATATYPE_NULL) return static_cast<int>(i);
  return -1;
}

int op_index(MPI_Op op) {
  const auto& v = ops();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == op && op != MPI_OP_NULL) return static_cast<int>(i);
  return -1;
}

MPI_Datatype type_at(int index) {
  const auto& v = types();
  return index >= 0 && static_cast<size_t>(index) < v.size() ? v[static_cast<size_t>(index)] : MPI_DATATYPE_NULL;
}

MPI_Op op_at(int index) {
  const auto& v = ops();
  return index >= 0 && static_cast<size_t>(index) < v.size() ? v[static_cast<size_t>(index)] : MPI_OP_NULL;
}

}  // namespace dtmpi::rma
