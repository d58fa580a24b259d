// Point-to-point with GPU buffers through a system MPI that need not be
// CUDA-aware: contiguous, strided and irregular types, 1 B to 64 MiB, every
// pairing of host and device ends, blocking and non-blocking, sender and
// receiver with different types of one signature, checked against the same
// exchange computed on host memory (and MPI_Sendrecv_replace on one device
// buffer; persistent requests; matched probes). 2 ranks, on one GPU or (rank i on device i) on two; run once per
// DTMPI_METHOD by CTest. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/mpi_world.hpp"
#include "common/random_types.hpp"
#include "dtmpi/dtmpi.h"
#include "mpi/gpu_p2p_common.hpp"

namespace {

struct Case {
  std::string name;
  MPI_Datatype type;
  int count;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"contiguous 1 B", MPI_BYTE, 1});
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
  MPI_Datatype b1, cube;
  MPI_Type_vector(100000, 1, 3, MPI_CHAR, &b1);
  MPI_Type_commit(&b1);
  c.push_back({"vector of 1 B blocks", b1, 1});
  const int sizes[3] = {96, 96, 96}, sub[3] = {90, 90, 3}, start[3] = {3, 3, 0};
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &cube);
  MPI_Type_commit(&cube);
  c.push_back({"3D subarray x-face, 24 B blocks", cube, 1});
  return c;
}

}  // namespace

TEST_F(GpuP2P, EveryPairingOfHostAndDevice) {
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
            ASSERT_EQ(gpu_alloc(&sbuf, bytes), cudaSuccess);
            cudaMemcpy(sbuf, mine.data(), bytes, cudaMemcpyHostToDevice);
          } else {
            hs = mine;
            sbuf = hs.data();
          }
          if (recv_dev) {
            ASSERT_EQ(gpu_alloc(&rbuf, bytes), cudaSuccess);
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
    const char* aware = std::getenv("DTMPI_CUDA_AWARE");
    if (aware && std::string(aware) == "1" && c.name == "indexed irregular") {
      EXPECT_GT(stat_value("CUDA-aware sends "), 0u);  // the packed device buffer went to the system MPI
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const char* chunk_min = std::getenv("DTMPI_IPC_CHUNK_MIN");
  if (chunk_min && std::atol(chunk_min) > 0) {
    EXPECT_GT(stat_value("chunked sends "), 0u);  // the chunked path ran
  }
}

// Sender and receiver describe the same bytes differently: a strided device
// buffer arrives as plain packed bytes and plain bytes arrive into a strided
// device buffer, on every method; and a device method really moved GPU to GPU.
TEST_F(GpuP2P, DifferentTypesOfOneSignature) {
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype vec;  // 2 MiB packed: 64 B blocks out of every 256 B
  MPI_Type_vector(32768, 16, 64, MPI_FLOAT, &vec);
  MPI_Type_commit(&vec);
  const size_t span = (32767 * 64 + 16) * sizeof(float), packed = 32768 * 16 * sizeof(float);
  auto mine = pattern(span, me + 7), theirs = pattern(span, peer + 7);
  std::vector<char> their_packed(packed);
  int pos = 0;
  PMPI_Pack(theirs.data(), 1, vec, their_packed.data(), static_cast<int>(packed), &pos, MPI_COMM_SELF);
  std::vector<char> want(span, 0x22);
  pos = 0;
  PMPI_Unpack(their_packed.data(), static_cast<int>(packed), &pos, want.data(), 1, vec, MPI_COMM_SELF);
  std::vector<char> my_packed(packed);
  pos = 0;
  PMPI_Pack(mine.data(), 1, vec, my_packed.data(), static_cast<int>(packed), &pos, MPI_COMM_SELF);
  char *dvec, *dbytes;
  ASSERT_EQ(gpu_alloc(&dvec, span), cudaSuccess);
  ASSERT_EQ(gpu_alloc(&dbytes, packed), cudaSuccess);
  const uint64_t ipc_before = stat_value("CUDA IPC reads ");
  for (int dir = 0; dir < 2; ++dir) {
    // dir 0: even rank sends the strided buffer, odd rank receives bytes
    const bool send_vec = (me == 0) == (dir == 0);
    MPI_Request r[2];
    if (send_vec) {
      cudaMemcpy(dvec, mine.data(), span, cudaMemcpyHostToDevice);
      cudaMemset(dbytes, 0x22, packed);
      cudaDeviceSynchronize();
      ASSERT_EQ(MPI_Isend(dvec, 1, vec, peer, 9, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
      ASSERT_EQ(MPI_Irecv(dbytes, static_cast<int>(packed), MPI_BYTE, peer, 9, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
    } else {
      cudaMemcpy(dbytes, my_packed.data(), packed, cudaMemcpyHostToDevice);
      cudaMemset(dvec, 0x22, span);
      cudaDeviceSynchronize();
      ASSERT_EQ(MPI_Isend(dbytes, static_cast<int>(packed), MPI_BYTE, peer, 9, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
      ASSERT_EQ(MPI_Irecv(dvec, 1, vec, peer, 9, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
    }
    MPI_Status sts[2];
    ASSERT_EQ(MPI_Waitall(2, r, sts), MPI_SUCCESS);
    int cnt = 0;
    MPI_Get_count(&sts[1], MPI_BYTE, &cnt);
    EXPECT_EQ(cnt, static_cast<int>(packed));
    if (send_vec) {
      std::vector<char> got(packed);
      cudaMemcpy(got.data(), dbytes, packed, cudaMemcpyDeviceToHost);
      EXPECT_TRUE(got == their_packed) << "strided device -> bytes, dir " << dir;
    } else {
      std::vector<char> got(span);
      cudaMemcpy(got.data(), dvec, span, cudaMemcpyDeviceToHost);
      EXPECT_TRUE(got == want) << "bytes -> strided device, dir " << dir;
    }
  }
  const char* method = std::getenv("DTMPI_METHOD");
  if (method && std::string(method) == "device") {
    EXPECT_GT(stat_value("CUDA IPC reads ") - ipc_before, 0u);
  }
  cudaFree(dvec);
  cudaFree(dbytes);
  MPI_Type_free(&vec);
}

// MPI_Alltoallv and MPI_Neighbor_alltoallv with device buffers and a strided
// type: the same exchange done by the system MPI on host copies is the oracle.
TEST_F(GpuP2P, AlltoallvOnDeviceBuffers) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Datatype vec, pairs;  // 2 of every 3 doubles
  MPI_Type_vector(1, 2, 3, MPI_DOUBLE, &vec);
  MPI_Type_create_resized(vec, 0, 3 * sizeof(double), &pairs);
  MPI_Type_commit(&pairs);
  std::vector<int> sc(static_cast<size_t>(n)), sd(static_cast<size_t>(n)), rc(static_cast<size_t>(n)),
      rd(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    sc[static_cast<size_t>(i)] = 1000 + 10 * me + i;  // what me sends to i
    rc[static_cast<size_t>(i)] = 1000 + 10 * i + me;  // what i sends to me
  }
  for (int i = 1; i < n; ++i) {
    sd[static_cast<size_t>(i)] = sd[static_cast<size_t>(i - 1)] + sc[static_cast<size_t>(i - 1)] + 7;
    rd[static_cast<size_t>(i)] = rd[static_cast<size_t>(i - 1)] + rc[static_cast<size_t>(i - 1)] + 5;
  }
  const size_t selems = static_cast<size_t>(sd.back() + sc.back()) * 3, relems = static_cast<size_t>(rd.back() + rc.back()) * 3;
  std::vector<double> hs(selems), want(relems, -1), got(relems, -2);
  for (size_t i = 0; i < selems; ++i) hs[i] = me * 1e6 + static_cast<double>(i);
  ASSERT_EQ(PMPI_Alltoallv(hs.data(), sc.data(), sd.data(), pairs, want.data(), rc.data(), rd.data(), pairs,
                           MPI_COMM_WORLD),
            MPI_SUCCESS);
  char *ds, *dr;
  ASSERT_EQ(gpu_alloc(&ds, selems * sizeof(double)), cudaSuccess);
  ASSERT_EQ(gpu_alloc(&dr, relems * sizeof(double)), cudaSuccess);
  cudaMemcpy(ds, hs.data(), selems * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemset(dr, 0xff, relems * sizeof(double));
  std::vector<double> poison(relems, -1);
  cudaMemcpy(dr, poison.data(), relems * sizeof(double), cudaMemcpyHostToDevice);
  ASSERT_EQ(MPI_Alltoallv(ds, sc.data(), sd.data(), pairs, dr, rc.data(), rd.data(), pairs, MPI_COMM_WORLD),
            MPI_SUCCESS);
  cudaMemcpy(got.data(), dr, relems * sizeof(double), cudaMemcpyDeviceToHost);
  EXPECT_TRUE(got == want) << "Alltoallv, device to device";
  // the neighbor form on a ring, device send buffer, host receive buffer
  MPI_Comm ring = dtmpi::testing::ring_graph();
  ASSERT_NE(ring, MPI_COMM_NULL);
  const int c2[2] = {500, 500}, s2[2] = {0, 600}, r2[2] = {0, 501};
  std::vector<double> nwant(relems, -1), ngot(relems, -1);
  ASSERT_EQ(PMPI_Neighbor_alltoallv(hs.data(), c2, s2, pairs, nwant.data(), c2, r2, pairs, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_alltoallv(ds, c2, s2, pairs, ngot.data(), c2, r2, pairs, ring), MPI_SUCCESS);
  EXPECT_TRUE(ngot == nwant) << "Neighbor_alltoallv, device to host";
  MPI_Comm_free(&ring);
  cudaFree(ds);
  cudaFree(dr);
  MPI_Type_free(&pairs);
  MPI_Type_free(&vec);
}

// A device buffer sent to oneself (a periodic halo on a process grid with a
// dimension of 1): every method, large enough for the multi-message ones;
// the device method reads the rank's own packed buffer (no CUDA IPC handle
// can be opened by the process that made it).
TEST_F(GpuP2P, SendToSelfOnDevice) {
  const int me = self_rank();
  MPI_Datatype col;
  MPI_Type_vector(1 << 16, 24, 64, MPI_BYTE, &col);  // 1.5 MiB in 24-byte blocks
  MPI_Type_commit(&col);
  const size_t span = size_t{64} << 16;
  auto host = pattern(span, me + 5);
  char *src, *dst;
  ASSERT_EQ(gpu_alloc(&src, span), cudaSuccess);
  ASSERT_EQ(gpu_alloc(&dst, span), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(src, host.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0, span), cudaSuccess);
  MPI_Request r;
  ASSERT_EQ(MPI_Irecv(dst, 1, col, me, 77, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Send(src, 1, col, me, 77, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
  std::vector<char> got(span), want(span, 0);
  ASSERT_EQ(cudaMemcpy(got.data(), dst, span, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t b = 0; b < (size_t{1} << 16); ++b) std::memcpy(&want[b * 64], &host[b * 64], 24);
  EXPECT_TRUE(got == want);
  cudaFree(src);
  cudaFree(dst);
  MPI_Type_free(&col);
}

// MPI semantics: once MPI_Send returns (or an MPI_Isend's request completes)
// the application may overwrite its buffer -- here with a kernel on a stream
// of its own that nothing orders after dtmpi's work. The receiver must get
// the bytes as they were at the call (the device method used to return with
// its pack only queued).
TEST_F(GpuP2P, SendBufferReusableWhenTheCallCompletes) {
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype col;
  MPI_Type_vector(1 << 21, 16, 32, MPI_BYTE, &col);  // 32 MiB in 16-byte blocks, 64 MiB span
  MPI_Type_commit(&col);
  const size_t span = size_t{64} << 20;
  auto host = pattern(span, 11);
  char* buf;
  ASSERT_EQ(gpu_alloc(&buf, span), cudaSuccess);
  cudaStream_t own;
  ASSERT_EQ(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), cudaSuccess);
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
    if (me == 0) {
      ASSERT_EQ(cudaMemcpy(buf, host.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
      if (nonblocking) {
        MPI_Request r;
        ASSERT_EQ(MPI_Isend(buf, 1, col, peer, 5, MPI_COMM_WORLD, &r), MPI_SUCCESS);
        ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
      } else {
        ASSERT_EQ(MPI_Send(buf, 1, col, peer, 5, MPI_COMM_WORLD), MPI_SUCCESS);
      }
      ASSERT_EQ(cudaMemsetAsync(buf, 0xff, span, own), cudaSuccess);  // the buffer is ours again
      ASSERT_EQ(cudaStreamSynchronize(own), cudaSuccess);
    } else {
      ASSERT_EQ(cudaMemset(buf, 0, span), cudaSuccess);
      ASSERT_EQ(MPI_Recv(buf, 1, col, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
      std::vector<char> got(span);
      ASSERT_EQ(cudaMemcpy(got.data(), buf, span, cudaMemcpyDeviceToHost), cudaSuccess);
      size_t wrong = 0;
      for (size_t b = 0; b < (size_t{1} << 21); ++b) wrong += std::memcmp(&got[b * 32], &host[b * 32], 16) != 0;
      EXPECT_EQ(wrong, 0u) << (nonblocking ? "MPI_Isend" : "MPI_Send");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  cudaStreamDestroy(own);
  cudaFree(buf);
  MPI_Type_free(&col);
}

// MPI_Sendrecv_replace on one device buffer: the outgoing bytes must be read
// before the incoming ones overwrite them, although a device-method send
// returns with its pack queued on one stream and the receive unpacks on
// another. Large enough (32 MiB of 16-byte blocks) for a slow pack to lose the
// race; the gaps between blocks keep their bytes.
TEST_F(GpuP2P, SendrecvReplaceOnDevice) {
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype col;
  MPI_Type_vector(1 << 21, 16, 32, MPI_BYTE, &col);
  MPI_Type_commit(&col);
  const size_t span = size_t{64} << 20;
  auto mine = pattern(span, 20 + me), theirs = pattern(span, 20 + peer);
  char* buf;
  ASSERT_EQ(gpu_alloc(&buf, span), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(buf, mine.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
  MPI_Status st;
  ASSERT_EQ(MPI_Sendrecv_replace(buf, 1, col, peer, 9, peer, 9, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  int n = 0;
  MPI_Get_count(&st, col, &n);
  EXPECT_EQ(n, 1);
  std::vector<char> got(span);
  ASSERT_EQ(cudaMemcpy(got.data(), buf, span, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t wrong = 0;
  for (size_t b = 0; b < (size_t{1} << 21); ++b)
    wrong += std::memcmp(&got[b * 32], &theirs[b * 32], 16) != 0 || std::memcmp(&got[b * 32 + 16], &mine[b * 32 + 16], 16) != 0;
  EXPECT_EQ(wrong, 0u);
  cudaFree(buf);
  MPI_Type_free(&col);
}

// Persistent requests on device buffers (a halo code's MPI_Send_init /
// MPI_Startall loop): contiguous and strided, small and large, round after
// round with new contents at the same addresses; a non-CUDA-aware system MPI
// given these pointers would crash.
TEST_F(GpuP2P, PersistentRequestsOnDevice) {
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype col;
  MPI_Type_vector(1 << 16, 16, 48, MPI_BYTE, &col);  // 1 MiB in 16-byte blocks
  MPI_Type_commit(&col);
  struct Shape {
    MPI_Datatype type;
    int count;
    size_t span, stride, block;  // the bytes touched: `block` of every `stride`
  };
  const Shape shapes[] = {{MPI_BYTE, 64, 64, 64, 64},
                          {MPI_DOUBLE, 1 << 19, size_t{4} << 20, size_t{4} << 20, size_t{4} << 20},
                          {col, 1, size_t{3} << 20, 48, 16}};
  const uint64_t before = stat_value("persistent starts ");
  int started = 0;
  for (const Shape& s : shapes) {
    char *out, *in;
    ASSERT_EQ(gpu_alloc(&out, s.span), cudaSuccess);
    ASSERT_EQ(gpu_alloc(&in, s.span), cudaSuccess);
    MPI_Request r[2];
    ASSERT_EQ(MPI_Recv_init(in, s.count, s.type, peer, 4, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Send_init(out, s.count, s.type, peer, 4, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
    for (int round = 0; round < 3; ++round) {
      auto mine = pattern(s.span, 40 + 2 * round + me), theirs = pattern(s.span, 40 + 2 * round + peer);
      ASSERT_EQ(cudaMemcpy(out, mine.data(), s.span, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(in, 0, s.span), cudaSuccess);
      ASSERT_EQ(MPI_Startall(2, r), MPI_SUCCESS);
      started += 2;
      MPI_Status st[2];
      if (round == 1) {  // completion by Testsome, one request at a time or both
        int done = 0;
        while (done < 2) {
          int cnt = 0, idx[2];
          ASSERT_EQ(MPI_Testsome(2, r, &cnt, idx, st), MPI_SUCCESS);
          done += cnt == MPI_UNDEFINED ? 0 : cnt;
        }
      } else {
        ASSERT_EQ(MPI_Waitall(2, r, st), MPI_SUCCESS);
        int n = -1;
        MPI_Get_count(&st[0], s.type, &n);
        EXPECT_EQ(n, s.count);
      }
      ASSERT_NE(r[0], MPI_REQUEST_NULL);
      std::vector<char> got(s.span);
      ASSERT_EQ(cudaMemcpy(got.data(), in, s.span, cudaMemcpyDeviceToHost), cudaSuccess);
      size_t wrong = 0;
      for (size_t b = 0; b < s.span; b += s.stride)
        wrong += std::memcmp(&got[b], &theirs[b], s.block) != 0 ||
                 (s.stride > s.block && got[b + s.block] != 0);  // the gap stays untouched
      EXPECT_EQ(wrong, 0u) << "shape " << &s - shapes << " round " << round;
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    cudaFree(out);
    cudaFree(in);
  }
  // every start was dtmpi's (with a CUDA-aware system MPI the contiguous ones are its own)
  if (std::getenv("DTMPI_TEST_USER_MANAGED") == nullptr) {
    EXPECT_EQ(stat_value("persistent starts ") - before, static_cast<uint64_t>(started));
  }
  MPI_Type_free(&col);
}

// Matched probe and receive of device buffers: a 64-byte message (one staged
// message) and a 1 MiB strided one (a descriptor by the device method): the
// probe reports the packed size, the matched receive unpacks on the GPU.
TEST_F(GpuP2P, MatchedProbeAndReceiveOnDevice) {
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype col;
  MPI_Type_vector(1 << 16, 16, 48, MPI_BYTE, &col);
  MPI_Type_commit(&col);
  const size_t span = size_t{3} << 20;
  auto mine = pattern(span, 60 + me), theirs = pattern(span, 60 + peer);
  char *out, *in;
  ASSERT_EQ(gpu_alloc(&out, span), cudaSuccess);
  ASSERT_EQ(gpu_alloc(&in, span), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out, mine.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
  for (int big = 0; big < 2; ++big) {
    ASSERT_EQ(cudaMemset(in, 0, span), cudaSuccess);
    MPI_Request sr;
    ASSERT_EQ(big ? MPI_Isend(out, 1, col, peer, 11, MPI_COMM_WORLD, &sr)
                  : MPI_Isend(out, 64, MPI_BYTE, peer, 11, MPI_COMM_WORLD, &sr),
              MPI_SUCCESS);
    MPI_Message msg;
    MPI_Status st;
    ASSERT_EQ(MPI_Mprobe(peer, 11, MPI_COMM_WORLD, &msg, &st), MPI_SUCCESS);
    int bytes = -1;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    ASSERT_EQ(bytes, big ? 1 << 20 : 64);
    ASSERT_EQ(big ? MPI_Mrecv(in, 1, col, &msg, &st) : MPI_Mrecv(in, 64, MPI_BYTE, &msg, &st), MPI_SUCCESS);
    ASSERT_EQ(MPI_Wait(&sr, MPI_STATUS_IGNORE), MPI_SUCCESS);
    std::vector<char> got(span);
    ASSERT_EQ(cudaMemcpy(got.data(), in, span, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t wrong = 0;
    if (big) {
      for (size_t b = 0; b < span; b += 48) wrong += std::memcmp(&got[b], &theirs[b], 16) != 0 || got[b + 16] != 0;
    } else {
      wrong = std::memcmp(got.data(), theirs.data(), 64) != 0 || got[64] != 0;
    }
    EXPECT_EQ(wrong, 0u) << (big ? "1 MiB strided" : "64 B");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  cudaFree(out);
  cudaFree(in);
  MPI_Type_free(&col);
}

// Two ranks on one GPU: after the first device-method transfer the sender
// knows its peer shares the GPU (Ack::kReadSameGpu) and sends a copy-engine
// layout of 64 KiB by the one-message path (no kernel, so no context turn).
TEST_F(GpuP2P, PeerOnTheSameGpuGetsTheCopyEnginePath) {
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  const char* method = std::getenv("DTMPI_METHOD");
  if (ndev != 1 || (method && std::string(method) != "auto") || std::getenv("DTMPI_TEST_USER_MANAGED"))
    GTEST_SKIP() << "needs both ranks on one GPU and DTMPI_METHOD=auto";
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype rows;
  MPI_Type_vector(256, 256, 512, MPI_BYTE, &rows);  // 64 KiB in 256-B rows
  MPI_Type_commit(&rows);
  const size_t span = 256 * 512;
  char* buf;
  ASSERT_EQ(gpu_alloc(&buf, span), cudaSuccess);
  auto mine = pattern(span, 70 + me), theirs = pattern(span, 70 + peer);
  const uint64_t staged0 = stat_value("staged sends "), multi0 = stat_value("multi-message sends ");
  for (int round = 0; round < 4; ++round) {
    ASSERT_EQ(cudaMemcpy(buf, mine.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(MPI_Sendrecv_replace(buf, 1, rows, peer, 12, peer, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
    std::vector<char> got(span);
    ASSERT_EQ(cudaMemcpy(got.data(), buf, span, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t wrong = 0;
    for (size_t r = 0; r < 256; ++r)
      wrong += std::memcmp(&got[r * 512], &theirs[r * 512], 256) != 0 || std::memcmp(&got[r * 512 + 256], &mine[r * 512 + 256], 256) != 0;
    ASSERT_EQ(wrong, 0u) << "round " << round;
    MPI_Barrier(MPI_COMM_WORLD);  // the answer of round 0 has arrived before round 1 chooses
  }
  // the first transfer to the peer in this process (here or in an earlier test)
  // went by the device method and taught the sender; without the rule every
  // one of these 64-KiB sends would too
  EXPECT_GE(stat_value("staged sends ") - staged0, 3u) << dtmpi_stats();
  EXPECT_LE(stat_value("multi-message sends ") - multi0, 1u);
  cudaFree(buf);
  MPI_Type_free(&rows);
}
