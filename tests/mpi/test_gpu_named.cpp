// Every buffer-taking entry point dtmpi interposes, on device memory, with
// predefined datatypes (MPI_INT, MPI_DOUBLE, MPI_BYTE, MPI_PACKED, the pair
// type MPI_DOUBLE_INT), counts 0, 1 and many, and MPI_BOTTOM with absolute
// displacements into device memory. The system MPI of the GPU machines is not
// CUDA-aware: any of these that reached it with a device pointer crashed it
// (issue 20: MPI_Pack(dev, n, MPI_INT, ...) as mpi4py's test_pack does with
// CuPy arrays). Results are compared with the same calls on host copies.
// Skipped (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

struct Named {
  MPI_Datatype type;
  const char* name;
};
const Named kTypes[] = {{MPI_INT, "MPI_INT"},
                        {MPI_DOUBLE, "MPI_DOUBLE"},
                        {MPI_BYTE, "MPI_BYTE"},
                        {MPI_PACKED, "MPI_PACKED"},
                        {MPI_DOUBLE_INT, "MPI_DOUBLE_INT"}};
const int kCounts[] = {0, 1, 7, 5000};

MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, ext = 0;
  MPI_Type_get_extent(t, &lb, &ext);
  return ext;
}

// Device memory holding a copy of `bytes`.
struct Dev {
  void* p = nullptr;
  size_t n;
  explicit Dev(const std::vector<unsigned char>& bytes) : n(bytes.size() ? bytes.size() : 1) {
    cudaMalloc(&p, n);
    cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
  }
  explicit Dev(size_t bytes, unsigned char fill) : n(bytes ? bytes : 1) {
    cudaMalloc(&p, n);
    cudaMemset(p, fill, n);
  }
  ~Dev() { cudaFree(p); }
  std::vector<unsigned char> get(size_t bytes) const {
    std::vector<unsigned char> v(bytes);
    cudaMemcpy(v.data(), p, bytes, cudaMemcpyDeviceToHost);
    return v;
  }
};

std::vector<unsigned char> pattern(size_t n, int seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((seed * 29 + i * 7 + (i >> 9)) & 0xFF);
  return v;
}

// The bytes of (count, type) of `v` that a receive must deliver: only the
// type's data (MPI_DOUBLE_INT has a hole of 4 bytes per element).
std::vector<unsigned char> data_of(const std::vector<unsigned char>& v, int count, MPI_Datatype t) {
  int sz = 0;
  MPI_Type_size(t, &sz);
  std::vector<unsigned char> out(static_cast<size_t>(sz) * count + 1);
  int pos = 0;
  PMPI_Pack(v.data(), count, t, out.data(), static_cast<int>(out.size()), &pos, MPI_COMM_SELF);
  out.resize(static_cast<size_t>(pos));
  return out;
}

}  // namespace

TEST(GpuNamed, PackAndUnpackOfPredefinedTypes) {
  for (const auto& nt : kTypes)
    for (int count : kCounts) {
      SCOPED_TRACE(std::string(nt.name) + " x" + std::to_string(count));
      const size_t n = static_cast<size_t>(extent_of(nt.type)) * count;
      const auto src = pattern(n, count);
      int psize = 0;
      MPI_Pack_size(count, nt.type, MPI_COMM_WORLD, &psize);
      std::vector<unsigned char> want(static_cast<size_t>(psize) + 8, 0);
      int wpos = 8;
      PMPI_Pack(src.data(), count, nt.type, want.data(), static_cast<int>(want.size()), &wpos, MPI_COMM_SELF);
      // device to host, device to device, host to device
      Dev dsrc(src), dpacked(want.size(), 0);
      std::vector<unsigned char> got(want.size(), 0);
      int pos = 8;
      ASSERT_EQ(MPI_Pack(dsrc.p, count, nt.type, got.data(), static_cast<int>(got.size()), &pos, MPI_COMM_WORLD),
                MPI_SUCCESS);
      EXPECT_EQ(pos, wpos);
      EXPECT_EQ(0, std::memcmp(got.data() + 8, want.data() + 8, static_cast<size_t>(wpos - 8)));
      pos = 8;
      ASSERT_EQ(MPI_Pack(dsrc.p, count, nt.type, dpacked.p, static_cast<int>(want.size()), &pos, MPI_COMM_WORLD),
                MPI_SUCCESS);
      EXPECT_EQ(pos, wpos);
      auto dgot = dpacked.get(want.size());
      EXPECT_EQ(0, std::memcmp(dgot.data() + 8, want.data() + 8, static_cast<size_t>(wpos - 8)));
      // unpack back into device memory, from host and from device
      for (int from_device = 0; from_device < 2; ++from_device) {
        Dev dout(n, 0x5A);
        pos = 8;
        ASSERT_EQ(MPI_Unpack(from_device ? dpacked.p : want.data(), static_cast<int>(want.size()), &pos, dout.p, count,
                             nt.type, MPI_COMM_WORLD),
                  MPI_SUCCESS);
        EXPECT_EQ(pos, wpos);
        EXPECT_EQ(data_of(dout.get(n), count, nt.type), data_of(src, count, nt.type)) << "from device " << from_device;
      }
    }
}

TEST(GpuNamed, PackAtBottomWithAbsoluteDisplacements) {
  const auto src = pattern(4096, 3);
  Dev d(src);
  // two blocks of the device buffer by absolute address
  int lens[2] = {100, 200};
  MPI_Aint displs[2];
  MPI_Get_address(static_cast<char*>(d.p) + 16, &displs[0]);
  MPI_Get_address(static_cast<char*>(d.p) + 1000, &displs[1]);
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, lens, displs, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  std::vector<unsigned char> got(300, 0), want(300);
  std::memcpy(want.data(), src.data() + 16, 100);
  std::memcpy(want.data() + 100, src.data() + 1000, 200);
  int pos = 0;
  ASSERT_EQ(MPI_Pack(MPI_BOTTOM, 1, t, got.data(), 300, &pos, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(pos, 300);
  EXPECT_EQ(got, want);
  // and the same layout sent from MPI_BOTTOM to this rank itself, received as bytes
  std::vector<unsigned char> recv(300, 0);
  MPI_Request r;
  ASSERT_EQ(MPI_Irecv(recv.data(), 300, MPI_BYTE, rank(), 5, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Send(MPI_BOTTOM, 1, t, rank(), 5, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
  EXPECT_EQ(recv, want);
  MPI_Type_free(&t);
}

TEST(GpuNamed, PointToPointOfPredefinedTypes) {
  const int me = rank(), n = size(), peer = (me + 1) % n, from = (me + n - 1) % n;
  for (const auto& nt : kTypes)
    for (int count : kCounts) {
      SCOPED_TRACE(std::string(nt.name) + " x" + std::to_string(count));
      const size_t bytes = static_cast<size_t>(extent_of(nt.type)) * count;
      const auto mine = pattern(bytes, me * 100 + count), theirs = pattern(bytes, from * 100 + count);
      const auto want = data_of(theirs, count, nt.type);
      Dev s(mine);
      auto check = [&](Dev& r, const char* how) {
        EXPECT_EQ(data_of(r.get(bytes), count, nt.type), want) << how;
      };
      {  // Isend/Irecv + Waitall
        Dev r(bytes, 0);
        MPI_Request q[2];
        ASSERT_EQ(MPI_Irecv(r.p, count, nt.type, from, 1, MPI_COMM_WORLD, &q[0]), MPI_SUCCESS);
        ASSERT_EQ(MPI_Isend(s.p, count, nt.type, peer, 1, MPI_COMM_WORLD, &q[1]), MPI_SUCCESS);
        MPI_Status st[2];
        ASSERT_EQ(MPI_Waitall(2, q, st), MPI_SUCCESS);
        int got = -1;
        MPI_Get_count(&st[0], nt.type, &got);
        EXPECT_EQ(got, count);
        check(r, "Isend/Irecv");
      }
      {  // Sendrecv, then Ssend/Recv in a ring order
        Dev r(bytes, 0);
        ASSERT_EQ(MPI_Sendrecv(s.p, count, nt.type, peer, 2, r.p, count, nt.type, from, 2, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE),
                  MPI_SUCCESS);
        check(r, "Sendrecv");
      }
      {  // Sendrecv_replace
        Dev r(mine);
        ASSERT_EQ(MPI_Sendrecv_replace(r.p, count, nt.type, peer, 3, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  MPI_SUCCESS);
        check(r, "Sendrecv_replace");
      }
      {  // persistent
        Dev r(bytes, 0);
        MPI_Request q[2];
        ASSERT_EQ(MPI_Recv_init(r.p, count, nt.type, from, 4, MPI_COMM_WORLD, &q[0]), MPI_SUCCESS);
        ASSERT_EQ(MPI_Send_init(s.p, count, nt.type, peer, 4, MPI_COMM_WORLD, &q[1]), MPI_SUCCESS);
        ASSERT_EQ(MPI_Startall(2, q), MPI_SUCCESS);
        ASSERT_EQ(MPI_Waitall(2, q, MPI_STATUSES_IGNORE), MPI_SUCCESS);
        MPI_Request_free(&q[0]);
        MPI_Request_free(&q[1]);
        check(r, "persistent");
      }
      {  // matched probe
        Dev r(bytes, 0);
        MPI_Request sq;
        ASSERT_EQ(MPI_Isend(s.p, count, nt.type, peer, 6, MPI_COMM_WORLD, &sq), MPI_SUCCESS);
        MPI_Message m;
        ASSERT_EQ(MPI_Mprobe(from, 6, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE), MPI_SUCCESS);
        ASSERT_EQ(MPI_Mrecv(r.p, count, nt.type, &m, MPI_STATUS_IGNORE), MPI_SUCCESS);
        ASSERT_EQ(MPI_Wait(&sq, MPI_STATUS_IGNORE), MPI_SUCCESS);
        check(r, "Mprobe/Mrecv");
      }
    }
}

TEST(GpuNamed, CollectivesOfPredefinedTypes) {
  const int me = rank(), n = size();
  for (int count : {0, 1, 300}) {
    SCOPED_TRACE("count " + std::to_string(count));
    // Bcast of doubles from rank 0
    {
      const auto root = pattern(sizeof(double) * count, 11);
      Dev b(me == 0 ? root : std::vector<unsigned char>(root.size(), 0));
      ASSERT_EQ(MPI_Bcast(b.p, count, MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_EQ(b.get(root.size()), root);
    }
    // Allreduce of ints (sum), Allgather and Alltoall of bytes
    {
      std::vector<int> v(static_cast<size_t>(count)), want(static_cast<size_t>(count));
      for (int i = 0; i < count; ++i) {
        v[static_cast<size_t>(i)] = me * 1000 + i;
        want[static_cast<size_t>(i)] = 0;
        for (int r = 0; r < n; ++r) want[static_cast<size_t>(i)] += r * 1000 + i;
      }
      std::vector<unsigned char> raw(v.size() * sizeof(int));
      if (!raw.empty()) std::memcpy(raw.data(), v.data(), raw.size());
      Dev in(raw), out(raw.size(), 0);
      ASSERT_EQ(MPI_Allreduce(in.p, out.p, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
      auto got = out.get(raw.size());
      std::vector<int> res(static_cast<size_t>(count));
      if (!got.empty()) std::memcpy(res.data(), got.data(), got.size());
      EXPECT_EQ(res, want);
    }
    {
      const auto mine = pattern(static_cast<size_t>(count), me);
      Dev in(mine), out(static_cast<size_t>(count) * n, 0);
      ASSERT_EQ(MPI_Allgather(in.p, count, MPI_BYTE, out.p, count, MPI_BYTE, MPI_COMM_WORLD), MPI_SUCCESS);
      auto got = out.get(static_cast<size_t>(count) * n);
      for (int r = 0; r < n; ++r) {
        const auto theirs = pattern(static_cast<size_t>(count), r);
        EXPECT_EQ(0, std::memcmp(got.data() + static_cast<size_t>(r) * count, theirs.data(), theirs.size()))
            << "Allgather from " << r;
      }
    }
    {
      const auto mine = pattern(static_cast<size_t>(count) * n, me);
      Dev in(mine), out(static_cast<size_t>(count) * n, 0);
      ASSERT_EQ(MPI_Alltoall(in.p, count, MPI_PACKED, out.p, count, MPI_PACKED, MPI_COMM_WORLD), MPI_SUCCESS);
      auto got = out.get(static_cast<size_t>(count) * n);
      for (int r = 0; r < n; ++r) {
        const auto theirs = pattern(static_cast<size_t>(count) * n, r);
        EXPECT_EQ(0, std::memcmp(got.data() + static_cast<size_t>(r) * count,
                                 theirs.data() + static_cast<size_t>(me) * count, static_cast<size_t>(count)))
            << "Alltoall from " << r;
      }
    }
  }
}
