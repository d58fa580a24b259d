// Device memory through the Fortran entry points (issue 26): what a CUDA
// Fortran or OpenACC `host_data use_device` program hands to MPI. The GPU
// machine's mpif90 has no gfortran, so this C++ test calls the Fortran symbols
// themselves (mpi_send_, mpi_recv_, mpi_isend_, mpi_irecv_, mpi_waitall_,
// mpi_pack_, mpi_unpack_, mpi_allgather_) with cudaMalloc'ed buffers and
// derived types, and compares the bytes with the same calls on host memory.
// Open MPI: the symbols are dtmpi's (src/interpose/fortran); MPICH: its
// libmpichfort's, which call the C MPI_* that dtmpi serves. 2 ranks; skipped
// (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

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
