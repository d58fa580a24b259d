// MPI_Pack / MPI_Unpack through the interposer with GPU buffers on either or
// both sides (device, managed, mapped pinned, pageable host), compared with the
// system MPI on host copies. Skipped (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <vector>

#include "common/random_types.hpp"

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
