// Batched device-method sends (DTMPI_BATCH_PACKS=1: test_gpu_p2p_batched;
// in the other runs of test_gpu_p2p the same exchanges take the unbatched
// path): many MPI_Isend of different layouts before one MPI_Waitall, and a
// sender that blocks in a call dtmpi does not see. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dtmpi/dtmpi.h"
#include "mpi/gpu_p2p_common.hpp"

namespace {

// Whether this run's device-method sends may be batched (DTMPI_BATCH_PACKS,
// a method that lets the device method run, receivers that map over IPC).
bool batching_expected() {
  auto env = [](const char* n) {
    const char* v = std::getenv(n);
    return std::string(v ? v : "");
  };
  const std::string m = env("DTMPI_METHOD");
  // (DTMPI_IPC_CHUNK_MIN: messages packed in chunks are not batched)
  return (m.empty() || m == "auto" || m == "device") && env("DTMPI_BATCH_PACKS") == "1" &&
         std::atol(env("DTMPI_IPC_CHUNK_MIN").c_str()) == 0 &&
         env("DTMPI_TEST_REFUSE_IPC") != "1" && env("DTMPI_CUDA_AWARE") != "1";
}

// Sends are batched only for receivers that gate their unpack kernels on
// another GPU (transport/send.cpp): with both ranks on one GPU nothing is.
bool ranks_on_two_gpus() {
  int ndev = 0;
  return cudaGetDeviceCount(&ndev) == cudaSuccess && ndev >= 2;
}

}  // namespace

// A halo-like epoch: many MPI_Isend of different layouts (word sizes 1 to 16
// bytes, 1-3 dims, one irregular) posted before one MPI_Waitall, whose packs
// dtmpi queues as one batch; every message checked against the system MPI's
// pack/unpack on host memory, and the batch really ran.
TEST_F(GpuP2P, BatchedIsendsOfManyLayouts) {
  if (!ranks_on_two_gpus()) GTEST_SKIP() << "sends are batched only to receivers on another GPU";
  const int me = self_rank(), peer = 1 - me;
  std::vector<MPI_Datatype> types;
  auto add = [&](MPI_Datatype t) {
    MPI_Type_commit(&t);
    types.push_back(t);
  };
  MPI_Datatype t;
  for (int blk : {1, 3, 8, 16, 24, 64, 512}) {
    MPI_Type_vector((256 << 10) / blk, blk, blk * 2 + (blk % 2), MPI_BYTE, &t);
    add(t);
  }
  MPI_Type_vector(1 << 15, 2, 5, MPI_DOUBLE, &t);
  add(t);
  const int sizes[3] = {64, 64, 64}, sub[3] = {60, 3, 60}, start[3] = {2, 1, 2};
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t);
  add(t);
  std::vector<int> bl(3000), di(3000);
  for (int i = 0, at = 0; i < 3000; ++i) bl[i] = 20 + i % 9, di[i] = at, at += bl[i] + 3 + i % 5;
  MPI_Type_indexed(3000, bl.data(), di.data(), MPI_FLOAT, &t);
  add(t);
  const size_t n = types.size();
  std::vector<size_t> span(n);
  std::vector<char*> sbuf(n), rbuf(n);
  std::vector<std::vector<char>> want(n);
  for (size_t i = 0; i < n; ++i) {
    MPI_Aint lb, extent;
    MPI_Type_get_extent(types[i], &lb, &extent);
    span[i] = static_cast<size_t>(lb + extent);
    ASSERT_EQ(gpu_alloc(&sbuf[i], span[i]), cudaSuccess);
    ASSERT_EQ(gpu_alloc(&rbuf[i], span[i]), cudaSuccess);
    auto mine = pattern(span[i], static_cast<int>(i) + 40 * me), theirs = pattern(span[i], static_cast<int>(i) + 40 * peer);
    ASSERT_EQ(cudaMemcpy(sbuf[i], mine.data(), span[i], cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(rbuf[i], 0x5a, span[i]), cudaSuccess);
    int psize = 0, pos = 0;
    MPI_Pack_size(1, types[i], MPI_COMM_SELF, &psize);
    std::vector<char> packed(static_cast<size_t>(psize));
    PMPI_Pack(theirs.data(), 1, types[i], packed.data(), psize, &pos, MPI_COMM_SELF);
    want[i].assign(span[i], 0x5a);
    pos = 0;
    PMPI_Unpack(packed.data(), psize, &pos, want[i].data(), 1, types[i], MPI_COMM_SELF);
  }
  const uint64_t batched_before = stat_value("batched sends ");
  for (int round = 0; round < 3; ++round) {  // the first round meets a receiver not yet known to gate over IPC
    std::vector<MPI_Request> r(2 * n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(MPI_Irecv(rbuf[i], 1, types[i], peer, 100 + static_cast<int>(i), MPI_COMM_WORLD, &r[i]), MPI_SUCCESS);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(MPI_Isend(sbuf[i], 1, types[i], peer, 100 + static_cast<int>(i), MPI_COMM_WORLD, &r[n + i]),
                MPI_SUCCESS);
    ASSERT_EQ(MPI_Waitall(static_cast<int>(2 * n), r.data(), MPI_STATUSES_IGNORE), MPI_SUCCESS);
    for (size_t i = 0; i < n; ++i) {
      std::vector<char> got(span[i]);
      ASSERT_EQ(cudaMemcpy(got.data(), rbuf[i], span[i], cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_TRUE(got == want[i]) << "layout " << i << ", round " << round;
      ASSERT_EQ(cudaMemset(rbuf[i], 0x5a, span[i]), cudaSuccess);
    }
  }
  if (batching_expected()) {
    EXPECT_GE(stat_value("batched sends ") - batched_before, n) << dtmpi_stats();
  }
  for (size_t i = 0; i < n; ++i) {
    cudaFree(sbuf[i]);
    cudaFree(rbuf[i]);
    MPI_Type_free(&types[i]);
  }
}

// A batched pack must not wait for the application's next MPI_Wait: here the
// sender blocks in a call dtmpi never sees (PMPI_Barrier) before it waits,
// and the barrier completes only once the receiver has its message -- which
// needs the batch queued meanwhile (the helper thread). Fails (after 30 s)
// instead of hanging.
TEST_F(GpuP2P, BatchedSendProgressesWhileTheSenderBlocksElsewhere) {
  if (!ranks_on_two_gpus()) GTEST_SKIP() << "sends are batched only to receivers on another GPU";
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype col;
  MPI_Type_vector(1 << 16, 8, 16, MPI_BYTE, &col);  // 512 KiB in 8-byte blocks
  MPI_Type_commit(&col);
  const size_t span = size_t{16} << 16;
  auto host = pattern(span, 3);
  char* buf;
  ASSERT_EQ(gpu_alloc(&buf, span), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    if (me == 0) {
      ASSERT_EQ(cudaMemcpy(buf, host.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
      MPI_Request r;
      ASSERT_EQ(MPI_Isend(buf, 1, col, peer, 31, MPI_COMM_WORLD, &r), MPI_SUCCESS);
      ASSERT_EQ(PMPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else {
      ASSERT_EQ(cudaMemset(buf, 0, span), cudaSuccess);
      MPI_Request r;
      ASSERT_EQ(MPI_Irecv(buf, 1, col, peer, 31, MPI_COMM_WORLD, &r), MPI_SUCCESS);
      const double t0 = MPI_Wtime();
      int done = 0;
      while (!done && MPI_Wtime() - t0 < 30) ASSERT_EQ(MPI_Test(&r, &done, MPI_STATUS_IGNORE), MPI_SUCCESS);
      if (!done) {
        ADD_FAILURE() << "the batched send never arrived while its sender was blocked in a barrier";
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      std::vector<char> got(span);
      ASSERT_EQ(cudaMemcpy(got.data(), buf, span, cudaMemcpyDeviceToHost), cudaSuccess);
      size_t wrong = 0;
      for (size_t b = 0; b < (size_t{1} << 16); ++b) wrong += std::memcmp(&got[b * 16], &host[b * 16], 8) != 0;
      EXPECT_EQ(wrong, 0u) << "round " << round;
      ASSERT_EQ(PMPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
    }
  }
  cudaFree(buf);
  MPI_Type_free(&col);
}
