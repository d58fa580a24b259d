// Device memory through the Fortran entry points (issue 26): what a CUDA
// Fortran or OpenACC `host_data use_device` program hands to MPI. The GPU
// machine's mpif90 has no gfortran, so this C++ test calls the Fortran symbols
// themselves (mpi_send_, mpi_recv_, mpi_isend_, mpi_irecv_, mpi_waitall_,
// mpi_pack_, mpi_unpack_, mpi_allgather_; one-sided: mpi_win_create_ over
// device memory, mpi_win_fence_, mpi_put_, mpi_get_, mpi_win_lock_,
// mpi_accumulate_, mpi_win_unlock_, mpi_barrier_, mpi_win_get_attr_,
// mpi_win_free_) with cudaMalloc'ed buffers and derived types, and compares
// the bytes with the same calls on host memory.
// Open MPI: the symbols are dtmpi's (src/interpose/fortran); MPICH: its
// libmpichfort's, which call the C MPI_* that dtmpi serves. 2 ranks; skipped
// (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" {
void mpi_send_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_recv_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_isend_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_irecv_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_waitall_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_pack_(void*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_unpack_(void*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_allgather_(void*, MPI_Fint*, MPI_Fint*, void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_win_create_(void*, MPI_Aint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_win_fence_(MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_put_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_get_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_accumulate_(void*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                     MPI_Fint*);
void mpi_win_lock_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_win_unlock_(MPI_Fint*, MPI_Fint*, MPI_Fint*);
void mpi_barrier_(MPI_Fint*, MPI_Fint*);
void mpi_win_get_attr_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Fint*, MPI_Fint*);
void mpi_win_free_(MPI_Fint*, MPI_Fint*);
}

namespace {

constexpr int kN = 64;  // a kN x kN array of doubles, Fortran order
constexpr size_t kBytes = sizeof(double) * kN * kN;
constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

std::vector<double> pattern(int salt) {
  std::vector<double> v(kN * kN);
  for (size_t i = 0; i < v.size(); ++i) v[i] = salt * 100000.0 + static_cast<double>(i);
  return v;
}

// A kN x kN array in host or device memory, read back as host values.
struct Array {
  bool device;
  void* p = nullptr;
  std::vector<double> host;
  Array(bool on_device, const std::vector<double>& init) : device(on_device), host(init) {
    if (device) {
      EXPECT_EQ(cudaMalloc(&p, kBytes), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(p, init.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    } else {
      p = host.data();
    }
  }
  ~Array() {
    if (device) cudaFree(p);
  }
  std::vector<double> values() {
    if (device) {
      EXPECT_EQ(cudaMemcpy(host.data(), p, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return host;
  }
};

struct Types {  // Fortran handles of a row (vector) and a block (subarray, Fortran order)
  MPI_Datatype vec{}, sub{};
  MPI_Fint fvec, fsub, comm = MPI_Comm_c2f(MPI_COMM_WORLD);
  Types() {
    MPI_Type_vector(kN, 1, kN, MPI_DOUBLE, &vec);
    const int sizes[2] = {kN, kN}, subsizes[2] = {40, 17}, starts[2] = {3, 5};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &sub);
    MPI_Type_commit(&vec);
    MPI_Type_commit(&sub);
    fvec = MPI_Type_c2f(vec);
    fsub = MPI_Type_c2f(sub);
  }
  ~Types() {
    MPI_Type_free(&vec);
    MPI_Type_free(&sub);
  }
};

// Blocking and nonblocking point to point, as a Fortran program calls them.
std::vector<double> point_to_point(bool device) {
  Types t;
  const int me = rank();
  Array src(device, pattern(me + 1)), dst(device, pattern(0));
  MPI_Fint one = 1, peer = 1 - me, tag = 7, ierr = -1;
  MPI_Fint status[kStatusInts * 2] = {};
  char* row2 = static_cast<char*>(src.p) + sizeof(double) * 2;
  char* row5 = static_cast<char*>(dst.p) + sizeof(double) * 5;
  if (me == 0) {
    mpi_send_(row2, &one, &t.fvec, &peer, &tag, &t.comm, &ierr);
    EXPECT_EQ(ierr, MPI_SUCCESS);
    mpi_recv_(row5, &one, &t.fvec, &peer, &tag, &t.comm, status, &ierr);
  } else {
    mpi_recv_(row5, &one, &t.fvec, &peer, &tag, &t.comm, status, &ierr);
    EXPECT_EQ(ierr, MPI_SUCCESS);
    mpi_send_(row2, &one, &t.fvec, &peer, &tag, &t.comm, &ierr);
  }
  EXPECT_EQ(ierr, MPI_SUCCESS);
  MPI_Fint reqs[2], two = 2, tag2 = 8;
  mpi_irecv_(dst.p, &one, &t.fsub, &peer, &tag2, &t.comm, &reqs[0], &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  mpi_isend_(src.p, &one, &t.fsub, &peer, &tag2, &t.comm, &reqs[1], &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  mpi_waitall_(&two, reqs, status, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  MPI_Status c{};
  MPI_Status_f2c(status, &c);
  EXPECT_EQ(c.MPI_SOURCE, 1 - me);
  EXPECT_EQ(c.MPI_TAG, 8);
  return dst.values();
}

// MPI_PACK of the block, MPI_UNPACK into another array, and MPI_ALLGATHER of
// one row per rank (vector send type) into contiguous rows.
std::vector<double> pack_and_gather(bool device) {
  Types t;
  const int me = rank();
  Array src(device, pattern(me + 3)), packed(device, pattern(0)), out(device, pattern(0)), rows(device, pattern(0));
  MPI_Fint one = 1, size = static_cast<MPI_Fint>(kBytes), pos = 0, ierr = -1;
  mpi_pack_(src.p, &one, &t.fsub, packed.p, &size, &pos, &t.comm, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  EXPECT_EQ(pos, static_cast<MPI_Fint>(40 * 17 * sizeof(double)));
  MPI_Fint at = 0;
  mpi_unpack_(packed.p, &size, &at, out.p, &one, &t.fsub, &t.comm, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  EXPECT_EQ(at, pos);
  MPI_Fint n = kN, fdouble = MPI_Type_c2f(MPI_DOUBLE);
  mpi_allgather_(static_cast<char*>(src.p) + sizeof(double), &one, &t.fvec, rows.p, &n, &fdouble, &t.comm, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  std::vector<double> result = packed.values();
  result.resize(pos / sizeof(double));
  for (double v : out.values()) result.push_back(v);
  for (double v : rows.values()) result.push_back(v);
  return result;
}

// A window over the array (device memory: dtmpi's window, whatever DTMPI_RMA
// says), a row put into the peer's row 4 and the peer's row 9 got into row 1
// in fence epochs, the peer's row 3 added to row 11 under an exclusive lock.
// Returns the window and the got array.
std::vector<double> one_sided(bool device) {
  Types t;
  const int me = rank();
  Array mem(device, pattern(me + 5)), src(device, pattern(me + 7)), dst(device, pattern(0));
  MPI_Aint bytes = kBytes, at = 0;
  MPI_Fint unit = sizeof(double), info = MPI_Info_c2f(MPI_INFO_NULL), win = 0, ierr = -1;
  mpi_win_create_(mem.p, &bytes, &unit, &info, &t.comm, &win, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  // the Fortran handle of a window dtmpi serves (Open MPI: a negative number
  // of dtmpi's; MPICH: dtmpi's int handle, top two bits 00)
#ifdef OPEN_MPI
  if (device) {
    EXPECT_LT(win, 0);
  }
#else
  if (device) {
    EXPECT_EQ(static_cast<uint32_t>(win) >> 30, 0u);
  }
#endif
  MPI_Fint keyval = MPI_WIN_SIZE, flag = 0;
#ifdef MPICH
  keyval += 1;  // MPICH's Fortran MPI_WIN_SIZE (binding.hpp: win_keyval)
#endif
  MPI_Aint size = 0;
  mpi_win_get_attr_(&win, &keyval, &size, &flag, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  EXPECT_NE(flag, 0);
  EXPECT_EQ(size, static_cast<MPI_Aint>(kBytes));
  MPI_Fint zero = 0, one = 1, peer = 1 - me, fdouble = MPI_Type_c2f(MPI_DOUBLE), n = kN;
  char* src_row2 = static_cast<char*>(src.p) + sizeof(double) * 2;
  char* src_row3 = static_cast<char*>(src.p) + sizeof(double) * 3;
  char* dst_row1 = static_cast<char*>(dst.p) + sizeof(double) * 1;
  mpi_win_fence_(&zero, &win, &ierr);
  at = 4;
  mpi_put_(src_row2, &one, &t.fvec, &peer, &at, &one, &t.fvec, &win, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  mpi_win_fence_(&zero, &win, &ierr);
  at = 9;
  mpi_get_(dst_row1, &one, &t.fvec, &peer, &at, &one, &t.fvec, &win, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  mpi_win_fence_(&zero, &win, &ierr);
  MPI_Fint exclusive = MPI_LOCK_EXCLUSIVE, shared = MPI_LOCK_SHARED, sum = MPI_Op_c2f(MPI_SUM), self = me;
  mpi_win_lock_(&exclusive, &peer, &zero, &win, &ierr);
  at = 11;
  mpi_accumulate_(src_row3, &one, &t.fvec, &peer, &at, &n, &fdouble, &sum, &win, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  mpi_win_unlock_(&peer, &win, &ierr);
  mpi_barrier_(&t.comm, &ierr);
  mpi_win_lock_(&shared, &self, &zero, &win, &ierr);
  std::vector<double> result = mem.values();
  mpi_win_unlock_(&self, &win, &ierr);
  mpi_win_free_(&win, &ierr);
  EXPECT_EQ(ierr, MPI_SUCCESS);
  EXPECT_EQ(win, MPI_Win_c2f(MPI_WIN_NULL));
  for (double v : dst.values()) result.push_back(v);
  return result;
}

TEST(GpuFortran, OneSidedMatchesHost) {
  const auto host = one_sided(false);
  const auto dev = one_sided(true);
  ASSERT_EQ(host.size(), dev.size());
  EXPECT_EQ(std::memcmp(host.data(), dev.data(), host.size() * sizeof(double)), 0);
  const int peer = 1 - rank();
  EXPECT_EQ(dev[4 + kN * 6], (peer + 7) * 100000.0 + 2 + kN * 6);  // row 4 <- peer's row 2 (column 6)
  // row 11 (contiguous in the target: kN doubles from element 11) += peer's row 3
  EXPECT_EQ(dev[11 + 6], (rank() + 5) * 100000.0 + 11 + 6 + (peer + 7) * 100000.0 + 3 + kN * 6);
}

TEST(GpuFortran, PointToPointMatchesHost) {
  const auto host = point_to_point(false);
  const auto dev = point_to_point(true);
  ASSERT_EQ(host.size(), dev.size());
  EXPECT_EQ(std::memcmp(host.data(), dev.data(), host.size() * sizeof(double)), 0);
  EXPECT_EQ(host[5 + kN * 3], (1 - rank() + 1) * 100000.0 + 2 + kN * 3);  // row 5 <- peer's row 2
}

TEST(GpuFortran, PackUnpackAllgatherMatchHost) {
  const auto host = pack_and_gather(false);
  const auto dev = pack_and_gather(true);
  ASSERT_EQ(host.size(), dev.size());
  EXPECT_EQ(std::memcmp(host.data(), dev.data(), host.size() * sizeof(double)), 0);
}

}  // namespace
