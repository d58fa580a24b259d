// MPI_Pack / MPI_Unpack through the interposer with GPU buffers on either or
// both sides (device, managed, mapped pinned, pageable host), compared with the
// system MPI on host copies. Skipped (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/random_types.hpp"
#include "dtmpi/dtmpi.h"

namespace {

enum class Mem { kHost, kPinned, kDevice, kManaged };
const char* name(Mem m) {
  return m == Mem::kHost ? "host" : m == Mem::kPinned ? "pinned" : m == Mem::kDevice ? "device" : "managed";
}

struct Buffer {
  Mem mem;
  size_t n;
  char* p = nullptr;
  std::vector<char> host;
  Buffer(Mem m, size_t bytes) : mem(m), n(bytes ? bytes : 1) {
    if (m == Mem::kHost) host.resize(n), p = host.data();
    if (m == Mem::kPinned) cudaHostAlloc(reinterpret_cast<void**>(&p), n, cudaHostAllocMapped);
    if (m == Mem::kDevice) cudaMalloc(reinterpret_cast<void**>(&p), n);
    if (m == Mem::kManaged) cudaMallocManaged(reinterpret_cast<void**>(&p), n);
  }
  ~Buffer() {
    if (mem == Mem::kPinned) cudaFreeHost(p);
    if (mem == Mem::kDevice || mem == Mem::kManaged) cudaFree(p);
  }
  // cudaMemcpy from pageable memory may return before the device buffer is
  // written; dtmpi waits for the legacy default stream by default, but these
  // tests also hold under DTMPI_GPU_ORDER=stream, so they synchronize.
  void put(const std::vector<char>& v) {
    cudaMemcpy(p, v.data(), v.size(), cudaMemcpyDefault);
    cudaDeviceSynchronize();
  }
  std::vector<char> get() const {
    std::vector<char> v(n);
    cudaMemcpy(v.data(), p, n, cudaMemcpyDefault);
    return v;
  }
};

}  // namespace

TEST(GpuInterposed, PackAndUnpackBetweenEveryPairOfMemories) {
  const Mem kinds[] = {Mem::kHost, Mem::kPinned, Mem::kDevice, Mem::kManaged};
  dtmpi::testing::RandomTypes gen(777);
  for (int i = 0; i < 60; ++i) {
    MPI_Datatype t = gen.make(3);
    MPI_Type_commit(&t);
    const int count = gen.uniform(1, 3);
    int size = 0;
    MPI_Type_size(t, &size);
    const auto span = dtmpi::testing::span_of(t, count);
    const size_t n = static_cast<size_t>(span.hi - span.lo) + 16, bytes = static_cast<size_t>(size) * count + 8;
    std::vector<char> src(n);
    for (auto& c : src) c = static_cast<char>(gen.rng()());
    std::vector<char> want(bytes, 0);
    int wpos = 4;
    PMPI_Pack(src.data() - span.lo, count, t, want.data(), static_cast<int>(bytes), &wpos, MPI_COMM_SELF);
    auto offs = dtmpi::testing::typemap_offsets(t, count);
    std::sort(offs.begin(), offs.end());
    const bool unpackable = !offs.empty() && std::adjacent_find(offs.begin(), offs.end()) == offs.end();
    std::vector<char> want_unpacked(n, 0x33);
    if (unpackable) {
      int p = 4;
      PMPI_Unpack(want.data(), static_cast<int>(bytes), &p, want_unpacked.data() - span.lo, count, t, MPI_COMM_SELF);
    }
    for (Mem um : kinds) {
      for (Mem pm : kinds) {
        if (um == Mem::kHost && pm == Mem::kHost) continue;  // covered by the CPU tests
        Buffer user(um, n), packed(pm, bytes);
        user.put(src);
        packed.put(std::vector<char>(bytes, 0));
        int pos = 4;
        ASSERT_EQ(MPI_Pack(user.p - span.lo, count, t, packed.p, static_cast<int>(bytes), &pos, MPI_COMM_SELF),
                  MPI_SUCCESS);
        EXPECT_EQ(pos, wpos);
        ASSERT_EQ(packed.get(), want) << name(um) << " -> " << name(pm) << ": " << gen.recipe();
        if (!unpackable) continue;
        user.put(std::vector<char>(n, 0x33));
        pos = 4;
        ASSERT_EQ(MPI_Unpack(packed.p, static_cast<int>(bytes), &pos, user.p - span.lo, count, t, MPI_COMM_SELF),
                  MPI_SUCCESS);
        ASSERT_EQ(user.get(), want_unpacked) << name(pm) << " -> " << name(um) << ": " << gen.recipe();
      }
    }
    dtmpi::testing::free_type(t);
  }
}

// A pack that may return queued (DTMPI_PACK_ASYNC=1: test_gpu_interposed_pack_async)
// must still be seen by everything ordered after it: dtmpi's own transfer of
// the packed buffer (a device-method message to itself), the queued unpack
// of what arrived, and the application's copy on a blocking stream of its
// own. Large enough (2 MiB packed from 4 MiB in 8-byte blocks) that a missing
// order shows as stale bytes. Holds unchanged with it off.
TEST(GpuInterposed, QueuedPackFeedsTransfersAndStreams) {
  MPI_Datatype t;
  MPI_Type_vector(1 << 18, 8, 16, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  const size_t span = size_t{16} << 18, bytes = size_t{8} << 18;
  std::vector<char> src(span);
  for (size_t i = 0; i < span; ++i) src[i] = static_cast<char>(i * 13 + (i >> 11));
  std::vector<char> want(span, 0x11);
  for (size_t b = 0; b < (size_t{1} << 18); ++b) std::memcpy(&want[b * 16], &src[b * 16], 8);
  const auto queued_before = dtmpi::testing::stat_value("returned queued ");
  Buffer user(Mem::kDevice, span), packed(Mem::kDevice, bytes), arrived(Mem::kDevice, bytes), out(Mem::kDevice, span);
  cudaStream_t mine;
  ASSERT_EQ(cudaStreamCreate(&mine), cudaSuccess);  // a blocking stream: ordered after the legacy stream
  for (int round = 0; round < 3; ++round) {
    std::vector<char> round_src = src;
    for (size_t i = 0; i < span; i += 16) round_src[i] = static_cast<char>(round);
    std::vector<char> round_want = want;
    for (size_t i = 0; i < span; i += 16) round_want[i] = static_cast<char>(round);
    user.put(round_src);
    out.put(std::vector<char>(span, 0x11));
    arrived.put(std::vector<char>(bytes, 0));
    int pos = 0;
    ASSERT_EQ(MPI_Pack(user.p, 1, t, packed.p, static_cast<int>(bytes), &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    MPI_Request r[2];
    ASSERT_EQ(MPI_Irecv(arrived.p, static_cast<int>(bytes), MPI_PACKED, 0, 5, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Isend(packed.p, static_cast<int>(bytes), MPI_PACKED, 0, 5, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    pos = 0;
    ASSERT_EQ(MPI_Unpack(arrived.p, static_cast<int>(bytes), &pos, out.p, 1, t, MPI_COMM_WORLD), MPI_SUCCESS);
    std::vector<char> got(span);
    ASSERT_EQ(cudaMemcpyAsync(got.data(), out.p, span, cudaMemcpyDeviceToHost, mine), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(mine), cudaSuccess);
    size_t wrong = 0;
    for (size_t i = 0; i < span; ++i) wrong += got[i] != round_want[i];
    EXPECT_EQ(wrong, 0u) << "round " << round;
  }
  const char* env = std::getenv("DTMPI_PACK_ASYNC");
  if (env && std::string(env) == "1") {
    EXPECT_GE(dtmpi::testing::stat_value("returned queued ") - queued_before, 6u) << dtmpi_stats();
  } else {
    EXPECT_EQ(dtmpi::testing::stat_value("returned queued "), queued_before) << dtmpi_stats();
  }
  cudaStreamDestroy(mine);
  MPI_Type_free(&t);
}
