// Messages that end inside an element of the receive type, into GPU memory
// (issue 20, item 4): the received prefix of the typemap must arrive -- by
// the one-message path (below 64 KiB: finish_receive's unpack of a byte
// count), and by the multi-message methods CTest forces in turn (device: the
// unpack kernel reads a byte range of the peer's buffer; pipelined: the
// chunks' unpack on the device; staged/oneshot keep one message).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/random_types.hpp"
#include "mpi/gpu_p2p_common.hpp"

TEST_F(GpuP2P, MessageEndingInsideAnElementOnDevice) {
  const int me = self_rank(), peer = 1 - me;
  MPI_Datatype h, big;
  const int lens[5] = {2, 0, 1, 0, 3};  // zero-length blocks: 48 bytes of doubles in 96
  const MPI_Aint displs[5] = {0, 24, 40, 56, 72};
  MPI_Type_create_hindexed(5, lens, displs, MPI_DOUBLE, &h);
  MPI_Type_commit(&h);
  MPI_Type_vector(1025, 1, 2, MPI_DOUBLE, &big);  // 8200 bytes an element
  MPI_Type_commit(&big);
  struct Case {
    const char* name;
    MPI_Datatype type;
    int count, bytes;
  };
  const Case cases[] = {{"hindexed, 3 elements + 16 B", h, 5, 3 * 48 + 16},
                        {"8200-B element, 16 B", big, 2, 16},
                        {"hindexed, 1400 elements + 24 B", h, 1500, 1400 * 48 + 24},
                        {"8200-B element, 9 elements + 16 B", big, 10, 9 * 8200 + 16}};
  int tag = 40;
  for (const auto& c : cases) {
    const auto offs = dtmpi::testing::typemap_offsets(c.type, c.count);
    const auto span = dtmpi::testing::span_of(c.type, c.count);
    const size_t rbytes = static_cast<size_t>(span.hi) + 64;
    // the sender's doubles, every other one of its buffer (a strided type)
    const size_t sbytes = static_cast<size_t>(c.bytes) * 2;
    const auto mine = pattern(sbytes, me + 1), theirs = pattern(sbytes, peer + 1);
    std::vector<char> want(rbytes, 0x11);
    for (int i = 0; i < c.bytes; ++i)
      want[static_cast<size_t>(offs[static_cast<size_t>(i)])] = theirs[static_cast<size_t>(i / 8 * 16 + i % 8)];
    MPI_Datatype strided;
    MPI_Type_vector(c.bytes / 8, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    for (int send_dev = 0; send_dev < 2; ++send_dev, ++tag) {
      SCOPED_TRACE(std::string(c.name) + (send_dev ? ", from device memory" : ", from host memory"));
      char *sbuf = nullptr, *rbuf = nullptr;
      std::vector<char> hs = mine;
      if (send_dev) {
        ASSERT_EQ(gpu_alloc(&sbuf, sbytes), cudaSuccess);
        cudaMemcpy(sbuf, mine.data(), sbytes, cudaMemcpyHostToDevice);
      } else {
        sbuf = hs.data();
      }
      ASSERT_EQ(gpu_alloc(&rbuf, rbytes), cudaSuccess);
      cudaMemset(rbuf, 0x11, rbytes);
      cudaDeviceSynchronize();
      MPI_Request r[2];
      MPI_Status sts[2];
      ASSERT_EQ(MPI_Irecv(rbuf, c.count, c.type, peer, tag, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
      ASSERT_EQ(MPI_Isend(sbuf, 1, strided, peer, tag, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
      ASSERT_EQ(MPI_Waitall(2, r, sts), MPI_SUCCESS);
      int count = 0, bytes = 0;
      MPI_Get_count(&sts[0], c.type, &count);
      MPI_Get_count(&sts[0], MPI_BYTE, &bytes);
      EXPECT_EQ(count, MPI_UNDEFINED);
      EXPECT_EQ(bytes, c.bytes);
      std::vector<char> got(rbytes);
      cudaMemcpy(got.data(), rbuf, rbytes, cudaMemcpyDeviceToHost);
      size_t wrong = 0, first = 0;
      for (size_t i = 0; i < rbytes; ++i)
        if (got[i] != want[i] && wrong++ == 0) first = i;
      EXPECT_EQ(wrong, 0u) << "bytes differ from the received prefix of the typemap, the first at " << first;
      if (send_dev) cudaFree(sbuf);
      cudaFree(rbuf);
    }
    MPI_Type_free(&strided);
  }
  MPI_Type_free(&h);
  MPI_Type_free(&big);
  MPI_Barrier(MPI_COMM_WORLD);
}
