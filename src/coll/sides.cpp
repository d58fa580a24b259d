// coll/sides.hpp: packing the sides of the data-moving collectives.
#include "coll/sides.hpp"

#include <climits>

#include "base/system_mpi.hpp"
#include "coll/entry.hpp"
#include "pack/cpu_pack.hpp"
#include "type/registry.hpp"

namespace dtmpi::coll::detail {

namespace {

int pack_into(const void* user, int64_t count, MPI_Datatype t, char* out, int64_t bytes, MPI_Comm comm) {
  if (type::PlanPtr plan = type::plan_for(t)) {
    pack::pack_host(*plan, count, user, out);
    return MPI_SUCCESS;
  }
  if (count > INT_MAX || bytes > INT_MAX) return MPI_ERR_COUNT;
  int pos = 0;
  return REAL(MPI_Pack)(user, static_cast<int>(count), t, out, static_cast<int>(bytes), &pos, comm);
}

int unpack_from(const char* in, int64_t bytes, void* user, int64_t count, MPI_Datatype t, MPI_Comm comm) {
  if (type::PlanPtr plan = type::plan_for(t)) {
    pack::unpack_host(*plan, count, in, user);
    return MPI_SUCCESS;
  }
  if (count > INT_MAX || bytes > INT_MAX) return MPI_ERR_COUNT;
  int pos = 0;
  return REAL(MPI_Unpack)(in, static_cast<int>(bytes), &pos, user, static_cast<int>(count), t, comm);
}

MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  REAL(MPI_Type_get_extent)(t, &lb, &extent);
  return extent;
}

}  // namespace

bool contiguous(int64_t count, MPI_Datatype t) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  REAL(MPI_Type_size)(t, &size);
  REAL(MPI_Type_get_extent)(t, &lb, &extent);
  REAL(MPI_Type_get_true_extent)(t, &tlb, &textent);
  return tlb == 0 && textent == size && (count == 1 || extent == size);
}

Side side(const void* buf, int64_t count, MPI_Datatype t, bool read, MPI_Comm comm, int& rc) {
  Side s;
  s.user = const_cast<void*>(buf);
  s.count = count;
  s.type = t;
  if (contiguous(count, t)) {
    s.data = static_cast<char*>(s.user);
    return s;
  }
  const int64_t bytes = bytes_of(1, t) * count;
  s.packed.resize(static_cast<size_t>(bytes));
  s.data = s.packed.data();
  s.is_packed = true;
  if (read) {
    const int r = pack_into(buf, count, t, s.data, bytes, comm);
    if (rc == MPI_SUCCESS) rc = r;
  }
  return s;
}

namespace {

// Lays out the blocks (disp, counts, types set): the user's bytes where every
// block's elements lie back to back there, else a packed copy, block after
// block.
void lay_out(VSide& s, bool read, MPI_Comm comm, int& rc) {
  const size_t n = s.counts.size();
  s.blocks.bytes.resize(n);
  s.blocks.offset.resize(n);
  s.is_packed = false;
  for (size_t j = 0; j < n; ++j)
    if (s.counts[j] > 0 && !contiguous(s.counts[j], s.types[j])) s.is_packed = true;
  int64_t total = 0;
  for (size_t j = 0; j < n; ++j) {
    s.blocks.bytes[j] = block_bytes(s.counts[j], s.types[j]);
    s.blocks.offset[j] = s.is_packed ? total : s.disp[j];
    total += s.blocks.bytes[j];
  }
  if (!s.is_packed) {
    s.data = static_cast<char*>(s.user);
    return;
  }
  s.packed.resize(static_cast<size_t>(total));
  s.data = s.packed.data();
  for (size_t j = 0; read && j < n; ++j) {
    if (s.counts[j] <= 0) continue;
    const int r = pack_into(static_cast<const char*>(s.user) + s.disp[j], s.counts[j], s.types[j],
                            s.data + s.blocks.offset[j], s.blocks.bytes[j], comm);
    if (rc == MPI_SUCCESS) rc = r;
  }
}

}  // namespace

int64_t block_bytes(int count, MPI_Datatype t) { return count > 0 ? bytes_of(count, t) : 0; }

VSide vside(const void* buf, int n, const int* counts, const int* displs, MPI_Datatype t, bool read, MPI_Comm comm,
            int& rc) {
  VSide s;
  s.user = const_cast<void*>(buf);
  s.counts.assign(counts, counts + n);
  s.types.assign(static_cast<size_t>(n), t);
  const MPI_Aint extent = extent_of(t);
  for (int j = 0; j < n; ++j) s.disp.push_back(int64_t{displs[j]} * extent);
  lay_out(s, read, comm, rc);
  return s;
}

VSide wside(const void* buf, int n, const int* counts, const int* displs, const MPI_Datatype* types, bool read,
            MPI_Comm comm, int& rc) {
  VSide s;
  s.user = const_cast<void*>(buf);
  s.counts.assign(counts, counts + n);
  s.types.assign(types, types + n);
  s.disp.assign(displs, displs + n);
  lay_out(s, read, comm, rc);
  return s;
}

std::function<int()> unpacker(const Side& s, MPI_Comm comm) {
  return [data = s.data, bytes = static_cast<int64_t>(s.packed.size()), user = s.user, count = s.count,
          type = s.type, comm] { return unpack_from(data, bytes, user, count, type, comm); };
}

std::function<int()> unpacker(const VSide& s, MPI_Comm comm) {
  return [data = s.data, user = static_cast<char*>(s.user), counts = s.counts, disp = s.disp, types = s.types,
          blocks = s.blocks, comm] {
    for (size_t j = 0; j < counts.size(); ++j) {
      if (counts[j] <= 0) continue;
      const int r = unpack_from(data + blocks.offset[j], blocks.bytes[j], user + disp[j], counts[j], types[j], comm);
      if (r != MPI_SUCCESS) return r;
    }
    return MPI_SUCCESS;
  };
}

}  // namespace dtmpi::coll::detail
