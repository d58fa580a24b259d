// What the generated Fortran entry points (bindings_*.cpp) are made of: the
// symbol names one function is exported under, and the conversions of
// Fortran arguments to the C call dtmpi serves.
//
// The names and sentinels are Open MPI's. Its Fortran bindings (libmpi_mpifh for mpif.h and
// `use mpi`; libmpi_usempif08 for `use mpi_f08`) call PMPI_* directly, so
// dtmpi's MPI_* never see them. Every mpif.h / `use mpi` call lands on a
// symbol of libmpi_mpifh (mpi_send_, and the aliases Open MPI exports for the
// other name manglings: mpi_send__, mpi_send, MPI_SEND), and every mpi_f08
// procedure (mpi_send_f08_ in libmpi_usempif08) calls ompi_send_f of
// libmpi_mpifh through the PLT. Defining those five names here puts dtmpi in
// front of both. MPICH's mpif.h binding calls the C MPI_* itself, which dtmpi
// already serves: an MPICH build defines none of these names; it defines some
// of MPICH's mpi_f08 procedures instead (binding_mpich_f08.hpp), with the
// conversions below that both MPIs share (docs/fortran.md).
//
// Handle conversions (MPI_Comm_f2c, MPI_Status_c2f, ...) are called by their
// MPI_ names: local functions (macros in some MPIs) that move no data, which
// no tool needs to see twice; everything else reaches the system MPI through
// REAL() as the rest of dtmpi does (base/system_mpi.hpp).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#define DTMPI_FORTRAN_ALIAS(name, target, params) \
  extern "C" __attribute__((visibility("default"), alias(#target))) void name params;

// ompi_<name>_f is the definition; the four Fortran spellings alias it.
#define DTMPI_FORTRAN_ENTRY(lower, upper, params)                       \
  extern "C" __attribute__((visibility("default"))) void ompi_##lower##_f params; \
  DTMPI_FORTRAN_ALIAS(mpi_##lower##_, ompi_##lower##_f, params)         \
  DTMPI_FORTRAN_ALIAS(mpi_##lower##__, ompi_##lower##_f, params)        \
  DTMPI_FORTRAN_ALIAS(mpi_##lower, ompi_##lower##_f, params)            \
  DTMPI_FORTRAN_ALIAS(MPI_##upper, ompi_##lower##_f, params)            \
  extern "C" void ompi_##lower##_f params

// Open MPI 4.1's mpi_f08 procedures of the functions with LOGICAL results
// (MPI_Test*, MPI_Iprobe, MPI_Improbe, MPI_Request_get_status) call the PMPI
// name of the mpif.h binding (pmpi_test_), which bypassed dtmpi and met
// requests only dtmpi can complete; dtmpi defines that name for them too.
#define DTMPI_FORTRAN_PMPI_ALIAS(lower, params) DTMPI_FORTRAN_ALIAS(pmpi_##lower##_, ompi_##lower##_f, params)

// Open MPI's `use mpi` interfaces of the functions with a baseptr
// (MPI_Win_allocate, MPI_Win_shared_query) call mpi_x_cptr_ when the program
// passes a TYPE(C_PTR): aliases of ompi_x_f there, and here.
#define DTMPI_FORTRAN_CPTR_ALIAS(lower, upper, params)                     \
  DTMPI_FORTRAN_ALIAS(mpi_##lower##_cptr_, ompi_##lower##_f, params)       \
  DTMPI_FORTRAN_ALIAS(mpi_##lower##_cptr__, ompi_##lower##_f, params)      \
  DTMPI_FORTRAN_ALIAS(mpi_##lower##_cptr, ompi_##lower##_f, params)        \
  DTMPI_FORTRAN_ALIAS(MPI_##upper##_CPTR, ompi_##lower##_f, params)

// Open MPI's Fortran sentinels (MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE,
// ...) are common blocks; a Fortran program passes their addresses. The
// dynamic linker binds every module (program, libmpi, the Fortran libraries,
// dtmpi) to one definition of each, so comparing addresses is exact. gfortran
// names them with one trailing underscore; libmpi.so defines them.
extern "C" {
extern int mpi_fortran_bottom_;
extern int mpi_fortran_in_place_;
extern int mpi_fortran_status_ignore_;
extern int mpi_fortran_statuses_ignore_;
extern int mpi_fortran_unweighted_;
extern int mpi_fortran_weights_empty_;
extern int mpi_fortran_errcodes_ignore_;  // only MPI_Comm_spawn(_multiple) take it; dtmpi serves neither
}

namespace dtmpi::interpose::fortran {

// MPI_Fint is the INTEGER the MPI's Fortran bindings were built for; arrays
// of it are handed to C as int arrays, as the MPI's own bindings do.
static_assert(sizeof(MPI_Fint) == sizeof(int), "INTEGER arrays are passed to C as int arrays");
// INTEGERs per Fortran status (MPI_STATUS_SIZE; Open MPI 4.1's mpi.h lacks MPI_F_STATUS_SIZE)
inline constexpr std::size_t kStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);
// gfortran's .TRUE. (Open MPI's OMPI_FORTRAN_VALUE_TRUE with gfortran)
inline constexpr MPI_Fint kTrue = 1;

inline int in(const MPI_Fint* v) { return static_cast<int>(*v); }
inline void set_ierror(MPI_Fint* ierror, int rc) {
  if (ierror) *ierror = static_cast<MPI_Fint>(rc);  // mpif.h callers that omit it pass nothing usable
}
inline void* buffer(void* p) {
  if (p == &mpi_fortran_bottom_) return MPI_BOTTOM;
  if (p == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  return p;
}
inline const int* ints(const MPI_Fint* p) { return reinterpret_cast<const int*>(p); }
inline int* ints_out(MPI_Fint* p) { return reinterpret_cast<int*>(p); }
inline const int* weights(const MPI_Fint* p) {
  if (p == &mpi_fortran_unweighted_) return MPI_UNWEIGHTED;
  if (p == &mpi_fortran_weights_empty_) return MPI_WEIGHTS_EMPTY;
  return ints(p);
}
inline int logical(const MPI_Fint* v) { return *v != 0 ? 1 : 0; }
inline MPI_Fint logical_out(int v) { return v ? kTrue : 0; }
inline MPI_Fint one_based(int index) { return index == MPI_UNDEFINED ? index : index + 1; }
inline void to_one_based(MPI_Fint* indices, int n) {
  for (int i = 0; i < n; ++i) indices[i] += 1;  // n is MPI_UNDEFINED (< 0) when nothing completed
}

// Attribute values: Fortran's are INTEGER(KIND=MPI_ADDRESS_KIND) values
// where C's are pointers. One set from Fortran is stored as that value (the
// void* C's MPI_Win_set_attr keeps), so Fortran gets back what it set. The
// predefined window attributes point at their values in C (MPI_WIN_SIZE: an
// MPI_Aint; MPI_WIN_DISP_UNIT, _CREATE_FLAVOR, _MODEL: an int), and Fortran
// gets the value itself, as Open MPI's ompi_win_get_attr_f and MPICH's
// MPII_Win_get_attr give it; MPI_WIN_BASE is the base address. (C's value of
// an attribute set from Fortran is that value as a pointer; Open MPI's own
// binding would give C a pointer to it. Mixed-language attributes only.)
// MPICH's Fortran names of the predefined window attributes are C's keyval
// + 1 (mpif.h: MPI_WIN_BASE = 0x66000002, mpi.h: 0x66000001), which tells its
// binding which language asks; C's MPI_Win_get_attr knows C's. Open MPI's
// are C's.
inline int win_keyval(const MPI_Fint* f) {
#ifdef MPICH
  for (int k : {MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL})
    if (*f == k + 1) return k;
#endif
  return static_cast<int>(*f);
}
inline void* attr_in(const MPI_Aint* v) { return reinterpret_cast<void*>(*v); }
inline MPI_Aint attr_out(int keyval, void* c) {
  if (keyval == MPI_WIN_SIZE) return *static_cast<const MPI_Aint*>(c);
  if (keyval == MPI_WIN_DISP_UNIT || keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL)
    return *static_cast<const int*>(c);
  return reinterpret_cast<MPI_Aint>(c);
}

// CHARACTER(LEN=*) arguments: blank-padded, their length passed by gfortran
// after all the arguments. In: trailing blanks are not part of the name (as
// MPI's own bindings trim them). Out: the C string, blank-padded to the length.
inline std::string string_in(const char* f, std::size_t len) {
  while (len > 0 && f[len - 1] == ' ') --len;
  return std::string(f, len);
}
inline void string_out(const char* c, char* f, std::size_t len) {
  const std::size_t n = std::min(std::strlen(c), len);
  std::memcpy(f, c, n);
  std::memset(f + n, ' ', len - n);
}

// A C array of n elements: on the stack up to kInline, else on the heap.
template <class T, std::size_t kInline = 16>
class Scratch {
 public:
  explicit Scratch(int n) : n_(n > 0 ? static_cast<std::size_t>(n) : 0) {
    if (n_ > kInline) heap_.resize(n_);
  }
  T* data() { return n_ > kInline ? heap_.data() : inline_; }
  const T* data() const { return n_ > kInline ? heap_.data() : inline_; }
  std::size_t size() const { return n_; }

 private:
  std::size_t n_;
  T inline_[kInline] = {};
  std::vector<T> heap_;
};

// LOGICAL array -> int array (MPI_Cart_create's periods).
class Logicals : public Scratch<int> {
 public:
  Logicals(const MPI_Fint* f, int n) : Scratch(n) {
    for (std::size_t i = 0; i < size(); ++i) data()[i] = f[i] != 0;
  }
};

// Which peers an array of datatypes has one element per (alltoallw: every
// rank of the (remote) group; the neighborhood forms: the topology's
// neighbours, sources for receives and destinations for sends).
enum class Peers { kSend, kRecv, kNeighborSend, kNeighborRecv };
int peer_count(MPI_Comm comm, Peers which);

class Datatypes : public Scratch<MPI_Datatype> {
 public:
  Datatypes(const MPI_Fint* f, int n) : Scratch(n) {
    for (std::size_t i = 0; i < size(); ++i) data()[i] = MPI_Type_f2c(f[i]);
  }
};

// An array of requests, converted back after the call (completed ones become
// MPI_REQUEST_NULL; persistent ones keep their handle).
class Requests : public Scratch<MPI_Request> {
 public:
  Requests(MPI_Fint* f, int n) : Scratch(n), f_(f) {
    for (std::size_t i = 0; i < size(); ++i) data()[i] = MPI_Request_f2c(f[i]);
  }
  void write_back() {
    for (std::size_t i = 0; i < size(); ++i) f_[i] = MPI_Request_c2f(data()[i]);
  }

 private:
  MPI_Fint* f_;
};

// One status, or MPI_STATUS_IGNORE. It starts as the caller's, so a call that
// does not set it (a test that finds nothing complete) leaves it unchanged.
class Status {
 public:
  explicit Status(MPI_Fint* f) : f_(f == &mpi_fortran_status_ignore_ ? nullptr : f) {
    if (f_) MPI_Status_f2c(f_, &c_);
  }
  MPI_Status* c() { return f_ ? &c_ : MPI_STATUS_IGNORE; }
  void write_back() {
    if (f_) MPI_Status_c2f(&c_, f_);
  }

 private:
  MPI_Fint* f_;
  MPI_Status c_{};
};

// An array of statuses (capacity: the requests), or MPI_STATUSES_IGNORE.
class Statuses {
 public:
  Statuses(MPI_Fint* f, int capacity)
      : f_(f == &mpi_fortran_statuses_ignore_ ? nullptr : f), c_(f_ ? capacity : 0) {
    for (std::size_t i = 0; i < c_.size(); ++i) MPI_Status_f2c(f_ + i * kStatusSize, &c_.data()[i]);
  }
  MPI_Status* c() { return f_ ? c_.data() : MPI_STATUSES_IGNORE; }
  void write_back(int n) {  // the first n (Waitsome's outcount; MPI_UNDEFINED: none)
    if (!f_) return;
    for (int i = 0; i < n && static_cast<std::size_t>(i) < c_.size(); ++i)
      MPI_Status_c2f(&c_.data()[i], f_ + static_cast<std::size_t>(i) * kStatusSize);
  }

 private:
  MPI_Fint* f_;
  Scratch<MPI_Status, 8> c_;
};

}  // namespace dtmpi::interpose::fortran
