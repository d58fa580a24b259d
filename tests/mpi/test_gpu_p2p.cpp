// Point-to-point with GPU buffers through a system MPI that need not be
// CUDA-aware: contiguous, strided and irregular types, small and large, every
// pairing of host and device ends, blocking and non-blocking, checked against
// the same exchange computed on host memory. 2 ranks; skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/random_types.hpp"

namespace {

struct Case {
  std::string name;
  MPI_Datatype type;
  int count;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"contiguous 8 B", MPI_DOUBLE, 1});
  c.push_back({"contiguous 4 MiB", MPI_DOUBLE, 1 << 19});
  c.push_back({"contiguous 64 MiB", MPI_BYTE, 64 << 20});
  MPI_Datatype v, w, ix;
  MPI_Type_vector(1024, 3, 7, MPI_DOUBLE, &v);
  MPI_Type_commit(&v);
  c.push_back({"vector 24 B blocks x2", v, 2});
  MPI_Type_vector(1 << 16, 16, 64, MPI_INT, &w);
  MPI_Type_commit(&w);
  c.push_back({"vector 4 MiB of 64 B blocks", w, 1});
  std::vector<int> bl(5000), di(5000);
  for (int i = 0, at = 0; i < 5000; ++i) bl[i] = 1 + i % 4, di[i] = at, at += bl[i] + 1 + i % 3;
  MPI_Type_indexed(5000, bl.data(), di.data(), MPI_FLOAT, &ix);
  MPI_Type_commit(&ix);
  c.push_back({"indexed irregular", ix, 3});
  return c;
}

std::vector<char> pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>(seed * 31 + i * 7 + (i >> 9));
  return v;
}

}  // namespace

TEST(GpuP2P, EveryPairingOfHostAndDevice) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  ASSERT_EQ(n, 2);
  const int peer = 1 - me;
  for (auto& c : cases()) {
    const auto span = dtmpi::testing::span_of(c.type, c.count);
    const size_t bytes = static_cast<size_t>(span.hi - span.lo) + 64;
    const int64_t shift = 32 - span.lo;
    auto mine = pattern(bytes, me + 1), theirs = pattern(bytes, peer + 1);
    // expected: the peer's typemap bytes unpacked into a poisoned buffer
    int size = 0;
    MPI_Type_size(c.type, &size);
    std::vector<char> packed(static_cast<size_t>(size) * c.count + 1);
    int pos = 0;
    PMPI_Pack(theirs.data() + shift, c.count, c.type, packed.data(), static_cast<int>(packed.size()), &pos,
              MPI_COMM_SELF);
    std::vector<char> want(bytes, 0x11);
    pos = 0;
    PMPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos, want.data() + shift, c.count, c.type,
                MPI_COMM_SELF);
    for (int send_dev = 0; send_dev < 2; ++send_dev) {
      for (int recv_dev = 0; recv_dev < 2; ++recv_dev) {
        for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
          char *sbuf = nullptr, *rbuf = nullptr;
          std::vector<char> hs, hr;
          if (send_dev) {
            ASSERT_EQ(cudaMalloc(&sbuf, bytes), cudaSuccess);
            cudaMemcpy(sbuf, mine.data(), bytes, cudaMemcpyHostToDevice);
          } else {
            hs = mine;
            sbuf = hs.data();
          }
          if (recv_dev) {
            ASSERT_EQ(cudaMalloc(&rbuf, bytes), cudaSuccess);
            cudaMemset(rbuf, 0x11, bytes);
          } else {
            hr.assign(bytes, 0x11);
            rbuf = hr.data();
          }
          cudaDeviceSynchronize();
          MPI_Status st;
          if (nonblocking) {
            MPI_Request r[2];
            ASSERT_EQ(MPI_Irecv(rbuf + shift, c.count, c.type, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
            ASSERT_EQ(MPI_Isend(sbuf + shift, c.count, c.type, peer, 5, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
            MPI_Status sts[2];
            ASSERT_EQ(MPI_Waitall(2, r, sts), MPI_SUCCESS);
            st = sts[0];
          } else {
            ASSERT_EQ(MPI_Sendrecv(sbuf + shift, c.count, c.type, peer, 6, rbuf + shift, c.count, c.type, peer, 6,
                                   MPI_COMM_WORLD, &st),
                      MPI_SUCCESS);
          }
          int got_count = -1;
          MPI_Get_count(&st, c.type, &got_count);
          EXPECT_EQ(got_count, c.count);
          EXPECT_EQ(st.MPI_SOURCE, peer);
          std::vector<char> got(bytes);
          cudaMemcpy(got.data(), rbuf, bytes, cudaMemcpyDefault);
          EXPECT_TRUE(got == want) << c.name << ": send " << (send_dev ? "device" : "host") << ", receive "
                                   << (recv_dev ? "device" : "host") << (nonblocking ? ", Isend/Irecv" : ", Sendrecv");
          if (send_dev) cudaFree(sbuf);
          if (recv_dev) cudaFree(rbuf);
        }
      }
    }
    if (c.type != MPI_DOUBLE && c.type != MPI_BYTE) MPI_Type_free(&c.type);
  }
}
