// GPU packers against the CPU packer (itself checked against the system MPI):
// random datatypes, every word size and misalignment, large objects, every
// pair of memories. Skipped (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/random_types.hpp"
#include "pack/cpu_pack.hpp"
#include "pack/gpu_pack.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/translate.hpp"

namespace {

using dtmpi::type::PackPlan;

long env_or(const char* name, long dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : dflt;
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t n) { cudaMalloc(&p, n ? n : 1); }
  ~DeviceBuffer() { cudaFree(p); }
  char* get() const { return static_cast<char*>(p); }
};

struct PinnedBuffer {
  void* p = nullptr;
  explicit PinnedBuffer(size_t n) { cudaHostAlloc(&p, n ? n : 1, cudaHostAllocMapped | cudaHostAllocPortable); }
  ~PinnedBuffer() { cudaFreeHost(p); }
  char* get() const { return static_cast<char*>(p); }
};

// One random type: GPU pack (to device and to mapped pinned memory) equals the
// CPU pack; GPU unpack into a poisoned device buffer equals the CPU unpack.
// `misalign` shifts the user buffer off the allocation's 256-byte alignment.
void check_type(MPI_Datatype t, int count, std::mt19937_64& rng, const std::string& recipe,
                int misalign = 0) {
  auto built = dtmpi::type::build_plan(t);
  if (!built) return;  // left to the system MPI
  const PackPlan& plan = built.value().plan;
  const int64_t bytes = plan.size * count;
  const auto span = dtmpi::testing::span_of(t, count);
  const int64_t margin = 64 + misalign, n = span.hi - span.lo + 2 * margin;
  std::vector<unsigned char> host(static_cast<size_t>(n));
  for (auto& b : host) b = static_cast<unsigned char>(rng());
  const int64_t shift = margin - span.lo;  // user pointer = buffer + shift
  std::vector<unsigned char> want(static_cast<size_t>(bytes) + 1);
  dtmpi::pack::pack_host(plan, count, host.data() + shift, want.data());

  DeviceBuffer dev(static_cast<size_t>(n)), dpacked(static_cast<size_t>(bytes));
  PinnedBuffer pinned(static_cast<size_t>(bytes));
  CUDA_OK(cudaMemcpy(dev.get(), host.data(), static_cast<size_t>(n), cudaMemcpyHostToDevice));
  ASSERT_TRUE(dtmpi::pack::pack_device(plan, count, dev.get() + shift, dpacked.get(), 0, nullptr));
  ASSERT_TRUE(dtmpi::pack::pack_device(plan, count, dev.get() + shift, pinned.get(), 0, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<unsigned char> got(static_cast<size_t>(bytes) + 1);
  CUDA_OK(cudaMemcpy(got.data(), dpacked.get(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost));
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), static_cast<size_t>(bytes))) << recipe << "\n" << describe(plan);
  ASSERT_EQ(0, std::memcmp(pinned.get(), want.data(), static_cast<size_t>(bytes))) << "to pinned: " << recipe;

  // the same stream packed as three ranges cut at random (often unaligned)
  // bytes, as a large message is packed in chunks
  int64_t cut[4] = {0, 0, 0, bytes};
  if (bytes > 0) {
    cut[1] = static_cast<int64_t>(rng() % static_cast<uint64_t>(bytes + 1));
    cut[2] = static_cast<int64_t>(rng() % static_cast<uint64_t>(bytes + 1));
    if (cut[1] > cut[2]) std::swap(cut[1], cut[2]);
  }
  CUDA_OK(cudaMemset(dpacked.get(), 0xA5, static_cast<size_t>(bytes)));
  for (int k = 0; k < 3; ++k)
    ASSERT_TRUE(dtmpi::pack::pack_device(plan, count, dev.get() + shift, dpacked.get(), 0, nullptr,
                                         dtmpi::type::PackedRange{cut[k], cut[k + 1] - cut[k]}));
  CUDA_OK(cudaMemcpy(got.data(), dpacked.get(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost));
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), static_cast<size_t>(bytes)))
      << "in ranges cut at " << cut[1] << ", " << cut[2] << ": " << recipe << "\n" << describe(plan);

  auto offs = dtmpi::testing::typemap_offsets(t, count);
  std::sort(offs.begin(), offs.end());
  if (offs.empty() || std::adjacent_find(offs.begin(), offs.end()) != offs.end()) return;
  std::vector<unsigned char> poison(static_cast<size_t>(n));
  for (auto& b : poison) b = static_cast<unsigned char>(0x5A ^ rng());
  std::vector<unsigned char> cpu = poison;
  dtmpi::pack::unpack_host(plan, count, want.data(), cpu.data() + shift);
  CUDA_OK(cudaMemcpy(dev.get(), poison.data(), static_cast<size_t>(n), cudaMemcpyHostToDevice));
  ASSERT_TRUE(dtmpi::pack::unpack_device(plan, count, dpacked.get(), dev.get() + shift, 0, nullptr));
  std::vector<unsigned char> gpu(static_cast<size_t>(n));
  CUDA_OK(cudaMemcpy(gpu.data(), dev.get(), static_cast<size_t>(n), cudaMemcpyDeviceToHost));
  ASSERT_EQ(gpu, cpu) << "unpack: " << recipe << "\n" << describe(plan);

  CUDA_OK(cudaMemcpy(dev.get(), poison.data(), static_cast<size_t>(n), cudaMemcpyHostToDevice));
  for (int k = 2; k >= 0; --k)  // any order: each range writes only its own bytes
    ASSERT_TRUE(dtmpi::pack::unpack_device(plan, count, dpacked.get(), dev.get() + shift, 0, nullptr, {},
                                           dtmpi::type::PackedRange{cut[k], cut[k + 1] - cut[k]}));
  CUDA_OK(cudaMemcpy(gpu.data(), dev.get(), static_cast<size_t>(n), cudaMemcpyDeviceToHost));
  ASSERT_EQ(gpu, cpu) << "unpack in ranges cut at " << cut[1] << ", " << cut[2] << ": " << recipe << "\n"
                      << describe(plan);
}

}  // namespace

TEST(GpuPack, RandomTypesMatchTheCpuPacker) {
  const long n = env_or("DTMPI_TEST_TYPES", 3000);
  const uint64_t seed = static_cast<uint64_t>(env_or("DTMPI_TEST_SEED", 4242));
  dtmpi::testing::RandomTypes gen(seed);
  for (long i = 0; i < n && !::testing::Test::HasFailure(); ++i) {
    MPI_Datatype t = gen.make(4);
    MPI_Type_commit(&t);
    const int count = gen.uniform(1, 3);
    check_type(t, count, gen.rng(), "seed " + std::to_string(seed) + " #" + std::to_string(i) + " " + gen.recipe());
    dtmpi::testing::free_type(t);
  }
}

// One random type's `count` elements in a device buffer with margins.
struct Placed {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 0;
  PackPlan plan;
  int64_t shift = 0, n = 0, bytes = 0;
};

bool place(dtmpi::testing::RandomTypes& gen, Placed& p) {
  p.type = gen.make(4);
  MPI_Type_commit(&p.type);
  p.count = gen.uniform(1, 3);
  auto built = dtmpi::type::build_plan(p.type);
  if (!built) return false;
  p.plan = built.value().plan;
  const auto span = dtmpi::testing::span_of(p.type, p.count);
  const int64_t margin = 64 + gen.uniform(0, 7);  // often misaligned
  p.n = span.hi - span.lo + 2 * margin;
  p.shift = margin - span.lo;
  p.bytes = p.plan.size * p.count;
  return true;
}

// The layout-to-layout kernel (copy_layout_device, issue 21's RMA puts and
// gets between two non-contiguous GPU layouts) against the CPU: the source
// packed, its first `bytes` written over the destination's own packed image,
// that unpacked into the destination. Random pairs of types (strided and
// irregular plans on either side, counts 1-3, misaligned bases).
TEST(GpuPack, LayoutToLayoutMatchesTheCpuPacker) {
  const long n = env_or("DTMPI_TEST_TYPES", 3000) / 3;
  dtmpi::testing::RandomTypes gen(static_cast<uint64_t>(env_or("DTMPI_TEST_SEED", 4242)) + 7);
  auto& rng = gen.rng();
  long compared = 0;
  for (long i = 0; i < n && !::testing::Test::HasFailure(); ++i) {
    Placed src, dst;
    const bool ok = place(gen, src) && place(gen, dst);
    const std::string recipe = "#" + std::to_string(i);
    if (ok) {
      auto offs = dtmpi::testing::typemap_offsets(dst.type, dst.count);
      std::sort(offs.begin(), offs.end());
      const int64_t bytes = std::min(src.bytes, dst.bytes);
      if (!offs.empty() && std::adjacent_find(offs.begin(), offs.end()) == offs.end() && bytes > 0) {
        std::vector<unsigned char> s_host(static_cast<size_t>(src.n)), d_host(static_cast<size_t>(dst.n));
        for (auto& b : s_host) b = static_cast<unsigned char>(rng());
        for (auto& b : d_host) b = static_cast<unsigned char>(rng());
        std::vector<unsigned char> packed(static_cast<size_t>(dst.bytes) + 1), s_packed(static_cast<size_t>(src.bytes) + 1);
        dtmpi::pack::pack_host(src.plan, src.count, s_host.data() + src.shift, s_packed.data());
        dtmpi::pack::pack_host(dst.plan, dst.count, d_host.data() + dst.shift, packed.data());
        std::memcpy(packed.data(), s_packed.data(), static_cast<size_t>(bytes));
        std::vector<unsigned char> want = d_host;
        dtmpi::pack::unpack_host(dst.plan, dst.count, packed.data(), want.data() + dst.shift);
        DeviceBuffer ds(static_cast<size_t>(src.n)), dd(static_cast<size_t>(dst.n));
        CUDA_OK(cudaMemcpy(ds.get(), s_host.data(), s_host.size(), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(dd.get(), d_host.data(), d_host.size(), cudaMemcpyHostToDevice));
        ASSERT_TRUE(dtmpi::pack::copy_layout_device(src.plan, src.count, ds.get() + src.shift, dst.plan, dst.count,
                                                    dd.get() + dst.shift, bytes, 0, nullptr));
        std::vector<unsigned char> got(d_host.size());
        CUDA_OK(cudaMemcpy(got.data(), dd.get(), got.size(), cudaMemcpyDeviceToHost));
        ASSERT_EQ(got, want) << recipe << " (" << bytes << " bytes)\nfrom " << describe(src.plan) << "\nto "
                             << describe(dst.plan);
        ++compared;
      }
    }
    for (MPI_Datatype* t : {&src.type, &dst.type})
      if (*t != MPI_DATATYPE_NULL) dtmpi::testing::free_type(*t);
  }
  EXPECT_GT(compared, n / 4) << "too few pairs compared: the test would not see a wrong kernel";
}

// Every word size, with misaligned bases and strides: the kernel must pick a
// word that divides everything, and stay correct.
TEST(GpuPack, WordSizesAndMisalignment) {
  std::mt19937_64 rng(1);
  for (int block : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 100, 256}) {
    for (int pitch_extra : {0, 1, 2, 4, 8, 16}) {
      for (int base : {0, 1, 2, 4, 8, 12}) {
        MPI_Datatype t;
        MPI_Type_create_hvector(37, block, block + pitch_extra + 16, MPI_BYTE, &t);
        MPI_Type_commit(&t);
        auto b = dtmpi::type::build_plan(t);
        ASSERT_TRUE(b);
        const auto& sp = b.value().plan.strided();
        const int w = dtmpi::pack::strided_word_size(sp, reinterpret_cast<void*>(uintptr_t{1024} + base),
                                                     reinterpret_cast<void*>(uintptr_t{4096}));
        EXPECT_EQ(block % w, 0);
        EXPECT_EQ((block + pitch_extra + 16) % w, 0);
        EXPECT_EQ(base % w, 0);
        // correctness at this alignment
        check_type(t, 2, rng, "block " + std::to_string(block) + " base " + std::to_string(base), base);
        MPI_Type_free(&t);
      }
    }
  }
}

// Objects up to 64 MiB, strided and irregular.
TEST(GpuPack, LargeObjects) {
  std::mt19937_64 rng(2);
  for (int64_t bytes : {int64_t{1}, int64_t{1} << 10, int64_t{1} << 20, int64_t{64} << 20}) {
    for (int block : {1, 8, 64, 1024}) {
      if (block > bytes) continue;
      if (block == 1 && bytes > (int64_t{1} << 20)) continue;  // keeps the span under 1 GiB
      MPI_Datatype t;
      MPI_Type_vector(static_cast<int>(bytes / block), block, block * 2, MPI_BYTE, &t);
      MPI_Type_commit(&t);
      check_type(t, 1, rng, "vector " + std::to_string(bytes) + "/" + std::to_string(block));
      MPI_Type_free(&t);
    }
  }
  // an irregular indexed type of about 8 MiB
  const int n = 1 << 18;
  std::vector<int> bl(n), di(n);
  for (int i = 0, at = 0; i < n; ++i) {
    bl[i] = 1 + i % 7;
    di[i] = at;
    at += bl[i] + 1 + i % 3;
  }
  MPI_Datatype t;
  MPI_Type_indexed(n, bl.data(), di.data(), MPI_INT, &t);
  MPI_Type_commit(&t);
  check_type(t, 2, rng, "large indexed");
  MPI_Type_free(&t);
}

// The irregular kernel on a strided layout equals the strided kernel.
TEST(GpuPack, BlockListKernelOnAStridedLayout) {
  MPI_Datatype t;
  MPI_Type_vector(1000, 3, 7, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  auto b = dtmpi::type::build_plan(t);
  ASSERT_TRUE(b);
  const auto& plan = b.value().plan;
  const size_t span = 1000 * 7 * 8, bytes = static_cast<size_t>(plan.size);
  DeviceBuffer src(span), a(bytes), c(bytes);
  std::vector<unsigned char> host(span);
  for (size_t i = 0; i < span; ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
  CUDA_OK(cudaMemcpy(src.get(), host.data(), span, cudaMemcpyHostToDevice));
  ASSERT_TRUE(dtmpi::pack::pack_device(plan, 1, src.get(), a.get(), 0, nullptr));
  ASSERT_TRUE(dtmpi::pack::pack_device_as_block_list(plan, 1, src.get(), c.get(), 0, nullptr));
  std::vector<unsigned char> ha(bytes), hc(bytes);
  CUDA_OK(cudaMemcpy(ha.data(), a.get(), bytes, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hc.data(), c.get(), bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(ha, hc);
  MPI_Type_free(&t);
}

// Many (buffer, type) pieces at once: random types and counts (strided ones
// batched into launches of up to 32, others one launch each) pack and unpack
// exactly as the CPU packer does piece by piece.
TEST(GpuPack, BatchedPiecesMatchTheCpuPacker) {
  dtmpi::testing::RandomTypes gen(77);
  std::vector<MPI_Datatype> types;
  std::vector<dtmpi::type::PlanBuild> plans;
  struct Where { int64_t user, packed, bytes; int count; };
  std::vector<Where> at;
  int64_t user_bytes = 0, packed_bytes = 0;
  int strided_pieces = 0, other_pieces = 0;
  while (plans.size() < 70) {
    MPI_Datatype t = gen.make(3);
    MPI_Type_commit(&t);
    auto built = dtmpi::type::build_plan(t);
    const auto sp = dtmpi::testing::span_of(t, 3);
    auto offs = dtmpi::testing::typemap_offsets(t, 3);
    std::sort(offs.begin(), offs.end());
    const bool overlaps = std::adjacent_find(offs.begin(), offs.end()) != offs.end();  // unpack ill-defined
    if (!built || overlaps || sp.hi - sp.lo > (1 << 20) || built.value().plan.size == 0) {
      dtmpi::testing::free_type(t);
      continue;
    }
    const int count = 1 + static_cast<int>(plans.size() % 3);
    const auto span = dtmpi::testing::span_of(t, count);
    user_bytes = (user_bytes + 63) / 64 * 64;
    at.push_back({user_bytes - span.lo, packed_bytes, built.value().plan.size * count, count});
    user_bytes += span.hi - span.lo;
    packed_bytes += built.value().plan.size * count;
    dtmpi::type::StridedPlan whole;
    const auto& plan = built.value().plan;
    (plan.is_strided() && plan.strided_for_count(count, whole) && whole.ndims <= 3 ? strided_pieces : other_pieces)++;
    types.push_back(t);
    plans.push_back(std::move(built.value()));
  }
  std::vector<unsigned char> host(static_cast<size_t>(user_bytes));
  std::mt19937_64 rng(5);
  for (auto& b : host) b = static_cast<unsigned char>(rng());
  std::vector<unsigned char> want(static_cast<size_t>(packed_bytes));
  for (size_t i = 0; i < plans.size(); ++i)
    dtmpi::pack::pack_host(plans[i].plan, at[i].count, host.data() + at[i].user, want.data() + at[i].packed);
  DeviceBuffer dev(static_cast<size_t>(user_bytes)), packed(static_cast<size_t>(packed_bytes));
  CUDA_OK(cudaMemcpy(dev.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
  std::vector<dtmpi::pack::DevicePiece> pieces;
  for (size_t i = 0; i < plans.size(); ++i)
    pieces.push_back({&plans[i].plan, at[i].count, dev.get() + at[i].user, packed.get() + at[i].packed});
  int launches = 0;
  ASSERT_TRUE(dtmpi::pack::pack_pieces_device(pieces.data(), pieces.size(), 0, nullptr, &launches));
  EXPECT_EQ(launches, (strided_pieces + 31) / 32 + other_pieces);
  EXPECT_GE(strided_pieces, 33) << "the batch limit is not exercised";
  std::vector<unsigned char> got(want.size());
  CUDA_OK(cudaMemcpy(got.data(), packed.get(), got.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(got == want) << "batched pack";
  // unpack into a zeroed buffer: equals the CPU unpack of the same bytes
  std::vector<unsigned char> cpu(host.size(), 0);
  for (size_t i = 0; i < plans.size(); ++i)
    dtmpi::pack::unpack_host(plans[i].plan, at[i].count, want.data() + at[i].packed, cpu.data() + at[i].user);
  CUDA_OK(cudaMemset(dev.get(), 0, host.size()));
  ASSERT_TRUE(dtmpi::pack::unpack_pieces_device(pieces.data(), pieces.size(), 0, nullptr));
  std::vector<unsigned char> gpu(host.size());
  CUDA_OK(cudaMemcpy(gpu.data(), dev.get(), gpu.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(gpu == cpu) << "batched unpack";
  for (auto& t : types) dtmpi::testing::free_type(t);
}

TEST(GpuRuntime, PointerClassification) {
  DeviceBuffer d(4096);
  PinnedBuffer p(4096);
  std::vector<char> h(4096);
  using dtmpi::runtime::MemKind;
  EXPECT_EQ(dtmpi::runtime::pointer_info(d.get() + 100).kind, MemKind::kDevice);
  EXPECT_EQ(dtmpi::runtime::pointer_info(d.get() + 100).kind, MemKind::kDevice);  // cached
  EXPECT_EQ(dtmpi::runtime::pointer_info(p.get()).kind, MemKind::kPinnedHost);
  EXPECT_NE(dtmpi::runtime::pointer_info(p.get() + 8).device_ptr, nullptr);
  EXPECT_EQ(dtmpi::runtime::pointer_info(h.data()).kind, MemKind::kHost);
  void* m = nullptr;
  CUDA_OK(cudaMallocManaged(&m, 4096));
  EXPECT_EQ(dtmpi::runtime::pointer_info(m).kind, MemKind::kManaged);
  cudaFree(m);
}
