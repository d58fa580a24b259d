#include "random_types.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace dtmpi::testing {

namespace {
int64_t extent_of(MPI_Datatype t) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  return ext;
}
}  // namespace

void free_type(MPI_Datatype& t) {
  int ni, na, nd, comb;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  if (comb != MPI_COMBINER_NAMED) MPI_Type_free(&t);
}

MPI_Datatype RandomTypes::named() {
  static const MPI_Datatype kNamed[] = {
      MPI_BYTE,  MPI_CHAR,       MPI_SHORT,    MPI_INT,       MPI_FLOAT,    MPI_DOUBLE,
      MPI_LONG,  MPI_DOUBLE_INT, MPI_SHORT_INT, MPI_FLOAT_INT, MPI_LONG_INT, MPI_2INT,
      MPI_INT64_T, MPI_C_DOUBLE_COMPLEX};
  return kNamed[uniform(0, static_cast<int>(std::size(kNamed)) - 1)];
}

MPI_Datatype RandomTypes::make(int depth) {
  recipe_.clear();
  return derived(depth, recipe_);
}

MPI_Datatype RandomTypes::derived(int depth, std::string& text) {
  if (depth == 0 || uniform(0, 5) == 0) {
    MPI_Datatype t = named();
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(t, name, &len);
    text += name;
    return t;
  }
  std::string inner;
  MPI_Datatype child = derived(depth - 1, inner);
  int child_size = 0;
  MPI_Type_size(child, &child_size);
  if (child_size == 0) {
    // Empty types still appear at the top level and as zero-length blocks
    // among non-empty ones, but are not nested further: MPICH 4.0's packer
    // divides by zero on some types built over empty ones.
    free_type(child);
    inner.clear();
    child = named();
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(child, name, &len);
    inner = name;
  }
  const int64_t ext = std::max<int64_t>(1, extent_of(child));
  MPI_Datatype t = MPI_DATATYPE_NULL;
  char buf[256];
  const int kind = uniform(0, 12);
  int rc = MPI_SUCCESS;
  // constructors report invalid combinations (errors return, see below)
  MPI_Errhandler saved;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  switch (kind) {
    case 0: {
      int n = uniform(0, 4);
      rc = MPI_Type_contiguous(n, child, &t);
      std::snprintf(buf, sizeof buf, "contiguous(%d, ", n);
      break;
    }
    case 1: {
      int c = uniform(0, 4), bl = uniform(0, 3), s = uniform(-4, 5);
      rc = MPI_Type_vector(c, bl, s, child, &t);
      std::snprintf(buf, sizeof buf, "vector(%d,%d,%d, ", c, bl, s);
      break;
    }
    case 2: {
      int c = uniform(0, 4), bl = uniform(0, 3);
      MPI_Aint s = static_cast<MPI_Aint>(uniform(-3, 3) * ext + uniform(-3, 3));
      rc = MPI_Type_create_hvector(c, bl, s, child, &t);
      std::snprintf(buf, sizeof buf, "hvector(%d,%d,%ld, ", c, bl, static_cast<long>(s));
      break;
    }
    case 3:
    case 4: {
      int n = uniform(0, 4);
      std::vector<int> bl(n), di(n);
      std::vector<MPI_Aint> hd(n);
      std::string d;
      for (int i = 0; i < n; ++i) {
        bl[i] = uniform(0, 3);
        di[i] = uniform(-6, 6);
        hd[i] = static_cast<MPI_Aint>(di[i] * ext + uniform(-2, 2));
        d += std::to_string(bl[i]) + "@" + std::to_string(kind == 3 ? di[i] : hd[i]) + " ";
      }
      if (kind == 3)
        rc = MPI_Type_indexed(n, bl.data(), di.data(), child, &t);
      else
        rc = MPI_Type_create_hindexed(n, bl.data(), hd.data(), child, &t);
      std::snprintf(buf, sizeof buf, "%s(%s, ", kind == 3 ? "indexed" : "hindexed", d.c_str());
      break;
    }
    case 5:
    case 6: {
      int n = uniform(0, 4), bl = uniform(0, 3);
      std::vector<int> di(n);
      std::vector<MPI_Aint> hd(n);
      std::string d;
      for (int i = 0; i < n; ++i) {
        di[i] = uniform(-6, 6);
        hd[i] = static_cast<MPI_Aint>(di[i] * ext + uniform(-2, 2));
        d += std::to_string(kind == 5 ? di[i] : hd[i]) + " ";
      }
      if (kind == 5)
        rc = MPI_Type_create_indexed_block(n, bl, di.data(), child, &t);
      else
        rc = MPI_Type_create_hindexed_block(n, bl, hd.data(), child, &t);
      std::snprintf(buf, sizeof buf, "%s(bl %d: %s, ", kind == 5 ? "indexed_block" : "hindexed_block",
                    bl, d.c_str());
      break;
    }
    case 7: {
      int n = uniform(1, 3);
      std::vector<int> bl(n);
      std::vector<MPI_Aint> di(n);
      std::vector<MPI_Datatype> ty(n);
      std::string d;
      for (int i = 0; i < n; ++i) {
        bl[i] = uniform(0, 3);
        di[i] = static_cast<MPI_Aint>(uniform(-32, 64));
        ty[i] = uniform(0, 1) ? child : named();
        d += std::to_string(bl[i]) + "@" + std::to_string(di[i]) + (ty[i] == child ? "C " : "N ");
      }
      rc = MPI_Type_create_struct(n, bl.data(), di.data(), ty.data(), &t);
      std::snprintf(buf, sizeof buf, "struct(%s, ", d.c_str());
      break;
    }
    case 8: {
      int nd = uniform(1, 3);
      int sizes[3], subs[3], starts[3];
      std::string d;
      for (int i = 0; i < nd; ++i) {
        sizes[i] = uniform(1, 4);
        subs[i] = uniform(1, sizes[i]);
        starts[i] = uniform(0, sizes[i] - subs[i]);
        d += std::to_string(sizes[i]) + "/" + std::to_string(subs[i]) + "/" + std::to_string(starts[i]) + " ";
      }
      int order = uniform(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
      rc = MPI_Type_create_subarray(nd, sizes, subs, starts, order, child, &t);
      std::snprintf(buf, sizeof buf, "subarray(%s%s, ", d.c_str(), order == MPI_ORDER_C ? "C" : "F");
      break;
    }
    case 9: {
      int nd = uniform(1, 3);
      int g[3], dist[3], darg[3], ps[3], size = 1;
      std::string d;
      for (int i = 0; i < nd; ++i) {
        g[i] = uniform(1, 7);
        int k = uniform(0, 2);
        if (k == 0) {
          dist[i] = MPI_DISTRIBUTE_NONE;
          ps[i] = 1;
          darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
        } else {
          ps[i] = uniform(1, 3);
          if (k == 1) {
            dist[i] = MPI_DISTRIBUTE_BLOCK;
            const int need = (g[i] + ps[i] - 1) / ps[i];
            darg[i] = uniform(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : need + uniform(0, 2);
          } else {
            dist[i] = MPI_DISTRIBUTE_CYCLIC;
            darg[i] = uniform(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : uniform(1, 3);
          }
        }
        size *= ps[i];
        d += std::to_string(g[i]) + (k == 0 ? "n" : k == 1 ? "b" : "c") + std::to_string(darg[i]) +
             "/" + std::to_string(ps[i]) + " ";
      }
      int rank = uniform(0, size - 1);
      int order = uniform(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
      rc = MPI_Type_create_darray(size, rank, nd, g, dist, darg, ps, order, child, &t);
      std::snprintf(buf, sizeof buf, "darray(rank %d/%d: %s%s, ", rank, size, d.c_str(),
                    order == MPI_ORDER_C ? "C" : "F");
      break;
    }
    case 10:
    case 11: {
      MPI_Aint lb = uniform(-16, 16), e = ext + uniform(-4, 16);
      if (e < 1) e = 1;
      rc = MPI_Type_create_resized(child, lb, e, &t);
      std::snprintf(buf, sizeof buf, "resized(lb %ld ext %ld, ", static_cast<long>(lb), static_cast<long>(e));
      break;
    }
    default:
      rc = MPI_Type_dup(child, &t);
      std::snprintf(buf, sizeof buf, "dup(");
      break;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
  MPI_Errhandler_free(&saved);
  if (rc != MPI_SUCCESS) {  // e.g. a darray over an old type this MPI refuses
    MPI_Type_dup(child, &t);
    std::snprintf(buf, sizeof buf, "dup(");
  }
  text = std::string(buf) + inner + ")";
  free_type(child);
  return t;
}

Span span_of(MPI_Datatype t, int count) {
  int size = 0;
  MPI_Type_size(t, &size);
  if (size == 0 || count == 0) return Span{0, 0};  // bounds of empty types are arbitrary
  MPI_Aint tlb, text, lb, ext;
  MPI_Type_get_true_extent(t, &tlb, &text);
  MPI_Type_get_extent(t, &lb, &ext);
  const int64_t last = static_cast<int64_t>(count - 1) * ext;
  Span s;
  s.lo = std::min<int64_t>(tlb, tlb + last);
  s.hi = std::max<int64_t>(tlb + text, tlb + last + text);
  return s;
}

std::vector<int64_t> typemap_offsets(MPI_Datatype t, int count) {
  int size = 0;
  MPI_Type_size(t, &size);
  const int64_t bytes = static_cast<int64_t>(size) * count;
  Span s = span_of(t, count);
  const int64_t n = s.hi - s.lo;
  // +1: MPI_Pack rejects null buffers even for zero bytes
  std::vector<unsigned char> src(static_cast<size_t>(n) + 1);
  std::vector<unsigned char> packed(static_cast<size_t>(bytes) + 1);
  std::vector<int64_t> off(static_cast<size_t>(bytes), 0);
  for (int plane = 0; plane < 3; ++plane) {
    for (int64_t k = 0; k < n; ++k) src[k] = static_cast<unsigned char>((k >> (8 * plane)) & 0xff);
    int pos = 0;
    PMPI_Pack(src.data() - s.lo, count, t, packed.data(), static_cast<int>(bytes), &pos, MPI_COMM_SELF);
    for (int64_t i = 0; i < bytes; ++i) off[i] |= static_cast<int64_t>(packed[i]) << (8 * plane);
  }
  for (auto& o : off) o += s.lo;
  return off;
}

}  // namespace dtmpi::testing
