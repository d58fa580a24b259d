// Pointer classification (runtime/pointer_kind.hpp) against the driver's own
// answer (cudaPointerGetAttributes), for every kind of memory: pageable
// (heap, large malloc, stack, static, mmap'd pages, MPI_Alloc_mem's memory
// proven host by the host ranges), pinned (cudaHostAlloc, cudaMallocHost,
// cudaHostRegister), managed, device, IPC-mapped from the other rank; freed
// and reallocated in both orders; the start, middle, last byte and one past
// the end of each; thousands of random allocations and frees from several
// threads; and the buffer-location attribute end to end. Skipped (exit 77)
// without a GPU. Two ranks (IPC needs another process).
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "dtmpi/dtmpi.h"
#include "runtime/host_ranges.hpp"
#include "runtime/mapped_host.hpp"
#include "runtime/pointer_kind.hpp"

namespace {

namespace rt = dtmpi::runtime;
using rt::MemKind;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

int g_static[256];

// The driver's answer.
struct Truth {
  MemKind kind = MemKind::kHost;
  int device = -1;
};
Truth driver_truth(const void* p) {
  Truth t;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return t;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice: t.kind = MemKind::kDevice; break;
    case cudaMemoryTypeManaged: t.kind = MemKind::kManaged; break;
    case cudaMemoryTypeHost: t.kind = MemKind::kPinnedHost; break;
    default: return t;
  }
  t.device = a.device;
  return t;
}

// pointer_info never differs from the driver on GPU vs host, nor on the
// device; it may call pinned memory plain host only where the process layout
// proves it host (registered heap or stack memory). pointer_info_exact
// always agrees.
void expect_agrees(const void* p, const char* what) {
  const Truth t = driver_truth(p);
  const rt::PointerInfo fast = rt::pointer_info(p), exact = rt::pointer_info_exact(p);
  EXPECT_EQ(static_cast<int>(exact.kind), static_cast<int>(t.kind)) << what << " " << p << " (exact)";
  if (t.kind == MemKind::kPinnedHost && fast.kind == MemKind::kHost) {
    EXPECT_TRUE(rt::provably_host(p)) << what << " " << p;
  } else {
    EXPECT_EQ(static_cast<int>(fast.kind), static_cast<int>(t.kind)) << what << " " << p;
  }
  EXPECT_EQ(rt::on_gpu(fast), t.kind == MemKind::kDevice || t.kind == MemKind::kManaged) << what << " " << p;
  if (rt::on_gpu(fast)) {
    EXPECT_EQ(fast.device, t.device) << what;
  }
  if (exact.kind == MemKind::kPinnedHost) {
    EXPECT_NE(exact.device_ptr, nullptr) << what;
  }
}

void expect_span(const void* p, size_t len, const char* what) {
  const char* c = static_cast<const char*>(p);
  expect_agrees(c, what);
  expect_agrees(c + len / 2, what);
  expect_agrees(c + len - 1, what);
  expect_agrees(c + len, what);  // one past the end: whatever the driver says
}

TEST(PointerKind, EveryKindOfMemory) {
  char stack[256] = {};
  expect_span(stack, sizeof stack, "stack");
  expect_span(g_static, sizeof g_static, "static");
  void* small = std::malloc(200);
  expect_span(small, 200, "heap");
  void* big = std::malloc(4 << 20);
  expect_span(big, 4 << 20, "large malloc");
  // an mmap'd page: asked of the driver, never proven host by the layout
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  expect_span(page, 4096, "mmap'd page");
  EXPECT_FALSE(rt::provably_host(page));
  munmap(page, 4096);
  void *pinned = nullptr, *mallochost = nullptr, *dev = nullptr, *managed = nullptr;
  CUDA_OK(cudaHostAlloc(&pinned, 1 << 16, cudaHostAllocMapped | cudaHostAllocPortable));
  expect_span(pinned, 1 << 16, "cudaHostAlloc");
  CUDA_OK(cudaMallocHost(&mallochost, 3000));
  expect_span(mallochost, 3000, "cudaMallocHost");
  CUDA_OK(cudaMalloc(&dev, 1 << 20));
  expect_span(dev, 1 << 20, "device");
  expect_span(dev, 1 << 20, "device (range cache)");
  CUDA_OK(cudaMallocManaged(&managed, 1 << 16));
  expect_span(managed, 1 << 16, "managed");
  // registered later: the large block (mmap'd) and whole pages of the heap
  // (two registrations must not share a page)
  void* pages = std::aligned_alloc(4096, 8192);
  CUDA_OK(cudaHostRegister(big, 4 << 20, cudaHostRegisterDefault));
  expect_span(big, 4 << 20, "registered mmap'd");
  EXPECT_EQ(rt::pointer_info(big).kind, MemKind::kPinnedHost);  // not provable host: asked
  CUDA_OK(cudaHostRegister(pages, 8192, cudaHostRegisterDefault));
  expect_span(pages, 8192, "registered heap");
  CUDA_OK(cudaHostUnregister(pages));
  std::free(pages);
  CUDA_OK(cudaHostUnregister(big));
  expect_span(big, 4 << 20, "unregistered");
  cudaFree(managed);
  cudaFree(dev);
  cudaFreeHost(mallochost);
  cudaFreeHost(pinned);
  std::free(big);
  std::free(small);
}

TEST(PointerKind, FreedAndReallocatedBothOrders) {
  // device after device (range cache entry of a freed allocation, new buffer id)
  for (int i = 0; i < 50; ++i) {
    void* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 1 << 20));
    expect_span(d, 1 << 20, "device again");
    CUDA_OK(cudaFree(d));
    // host after device: a mapping asked for at the freed address
    void* h = mmap(d, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h != MAP_FAILED) {
      expect_span(h, 1 << 20, "host after device");
      munmap(h, 1 << 20);
    }
  }
  // device after host: free host mappings, then allocate device memory until
  // one lands where host memory was (or give up; each is checked anyway)
  int reused = 0;
  for (int i = 0; i < 50; ++i) {
    const size_t len = 2 << 20;
    void* h = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(h, MAP_FAILED);
    expect_span(h, len, "host before device");
    munmap(h, len);
    void *d = nullptr, *m = nullptr, *p = nullptr;
    CUDA_OK(cudaMalloc(&d, len));
    CUDA_OK(cudaMallocManaged(&m, 4096));
    CUDA_OK(cudaHostAlloc(&p, 4096, cudaHostAllocDefault));
    for (void* q : {d, m, p}) {
      const auto a = reinterpret_cast<uintptr_t>(q), lo = reinterpret_cast<uintptr_t>(h);
      reused += a >= lo && a < lo + len;
    }
    expect_span(d, len, "device after host");
    expect_span(m, 4096, "managed after host");
    expect_span(p, 4096, "pinned after host");
    cudaFree(d);
    cudaFree(m);
    cudaFreeHost(p);
  }
  std::printf("device/managed/pinned allocations at a freed host address: %d\n", reused);
}

// What the interposed MPI_Alloc_mem does (src/interpose/alloc_mem.cpp), in
// this executable's copy of the runtime (libdtmpi's own is not reachable from
// here): memory the driver calls not CUDA memory at both ends is added to the
// host ranges; dropped before it is freed.
bool add_like_alloc_mem(void* p, size_t len) {
  const char* c = static_cast<const char*>(p);
  return rt::pointer_info_exact(c).kind == MemKind::kHost && rt::pointer_info_exact(c + len - 1).kind == MemKind::kHost &&
         rt::add_host_range(p, len);
}

// MPI_Alloc_mem's memory: proven host without a driver call while it lives
// (libdtmpi counts it), the driver's answer again once freed -- device,
// managed and pinned memory allocated where it was (device after host), and
// host memory where device memory was (host after device).
TEST(PointerKind, AllocMemProvenHostUntilFreed) {
  const char* key = "MPI_Alloc_mem ranges proven host ";
  const uint64_t entries = dtmpi::testing::stat_value(key);
  const size_t len = 2 << 20;
  int reused = 0;
  for (int i = 0; i < 50; ++i) {
    void* mem = nullptr;
    ASSERT_EQ(MPI_Alloc_mem(static_cast<MPI_Aint>(len), MPI_INFO_NULL, &mem), MPI_SUCCESS);
    EXPECT_EQ(dtmpi::testing::stat_value(key), entries + 1) << "libdtmpi did not add MPI_Alloc_mem's memory";
    EXPECT_EQ(driver_truth(mem).kind, MemKind::kHost);
    ASSERT_TRUE(add_like_alloc_mem(mem, len));
    const uint64_t before = rt::driver_pointer_queries();
    for (size_t off : {size_t{0}, len / 2, len - 1}) {
      EXPECT_EQ(rt::pointer_info(static_cast<char*>(mem) + off).kind, MemKind::kHost);
      EXPECT_TRUE(rt::host_without_call(static_cast<char*>(mem) + off));
    }
    EXPECT_EQ(rt::driver_pointer_queries(), before) << "MPI_Alloc_mem's memory asked of the driver";
    expect_span(mem, len, "MPI_Alloc_mem");
    ASSERT_TRUE(rt::drop_host_range(mem));
    ASSERT_EQ(MPI_Free_mem(mem), MPI_SUCCESS);
    EXPECT_EQ(dtmpi::testing::stat_value(key), entries);
    void *d = nullptr, *m = nullptr, *p = nullptr;
    CUDA_OK(cudaMalloc(&d, len));
    CUDA_OK(cudaMallocManaged(&m, 4096));
    CUDA_OK(cudaHostAlloc(&p, 4096, cudaHostAllocDefault));
    for (void* q : {d, m, p}) {
      const auto a = reinterpret_cast<uintptr_t>(q), lo = reinterpret_cast<uintptr_t>(mem);
      reused += a >= lo && a < lo + len;
    }
    expect_span(d, len, "device after MPI_Alloc_mem");
    expect_span(m, 4096, "managed after MPI_Alloc_mem");
    expect_span(p, 4096, "pinned after MPI_Alloc_mem");
    // host after device: a mapping at the freed device address, added as
    // MPI_Alloc_mem would add it
    CUDA_OK(cudaFree(d));
    void* h = mmap(d, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h != MAP_FAILED) {
      if (add_like_alloc_mem(h, len)) {
        expect_span(h, len, "added host after device");
        rt::drop_host_range(h);
      }
      munmap(h, len);
    }
    cudaFree(m);
    cudaFreeHost(p);
  }
  std::printf("device/managed/pinned allocations where MPI_Alloc_mem's memory was: %d\n", reused);
}

// Random allocations and frees of every kind, each thread its own.
void random_rounds(unsigned seed, int rounds) {
  std::mt19937 rng(seed);
  struct Block {
    void* p;
    size_t len;
    int how;  // 0 malloc, 1 device, 2 managed, 3 pinned, 4 registered malloc, 5 mmap'd,
              // 6 mmap'd and added to the host ranges (as MPI_Alloc_mem's memory)
  };
  std::vector<Block> live;
  auto release = [](const Block& b) {
    switch (b.how) {
      case 0: std::free(b.p); break;
      case 1: case 2: cudaFree(b.p); break;
      case 3: cudaFreeHost(b.p); break;
      case 4: cudaHostUnregister(b.p); std::free(b.p); break;
      case 6: rt::drop_host_range(b.p); [[fallthrough]];  // dropped before it goes
      case 5: munmap(b.p, b.len); break;
    }
  };
  for (int i = 0; i < rounds; ++i) {
    if (live.size() < 32 && (live.empty() || rng() % 3 != 0)) {
      const int how = static_cast<int>(rng() % 7);
      const size_t len = 1 + rng() % (rng() % 4 == 0 ? (1 << 20) : 8192);
      void* p = nullptr;
      bool ok = true;
      switch (how) {
        case 0: p = std::malloc(len); break;
        case 1: ok = cudaMalloc(&p, len) == cudaSuccess; break;
        case 2: ok = cudaMallocManaged(&p, len) == cudaSuccess; break;
        case 3: ok = cudaHostAlloc(&p, len, cudaHostAllocMapped) == cudaSuccess; break;
        case 4:  // whole pages: two registrations must not share one
          p = std::aligned_alloc(4096, (len + 4095) / 4096 * 4096);
          ok = p && cudaHostRegister(p, len, cudaHostRegisterDefault) == cudaSuccess;
          if (!ok) std::free(p);
          break;
        case 5:
        case 6:
          p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          ok = p != MAP_FAILED;
          if (ok && how == 6) add_like_alloc_mem(p, len);  // a full table adds nothing: then asked
          break;
      }
      ASSERT_TRUE(ok && p) << "allocation kind " << how;
      live.push_back({p, len, how});
    } else {
      const size_t k = rng() % live.size();
      release(live[k]);
      live[k] = live.back();
      live.pop_back();
    }
    if (!live.empty()) {
      const Block& b = live[rng() % live.size()];
      expect_span(b.p, b.len, "random");
    }
  }
  for (auto& b : live) release(b);
}

TEST(PointerKind, RandomAllocationsSeveralThreads) {
  random_rounds(7, 2000);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      cudaSetDevice(0);
      random_rounds(100 + t, 1000);
    });
  for (auto& t : threads) t.join();
}

TEST(PointerKind, IpcMappedFromTheOtherRank) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  void* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 1 << 20));
  cudaIpcMemHandle_t mine{}, theirs{};
  CUDA_OK(cudaIpcGetMemHandle(&mine, d));
  MPI_Sendrecv(&mine, sizeof mine, MPI_BYTE, 1 - me, 0, &theirs, sizeof theirs, MPI_BYTE, 1 - me, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  void* mapped = nullptr;
  CUDA_OK(cudaIpcOpenMemHandle(&mapped, theirs, cudaIpcMemLazyEnablePeerAccess));
  expect_span(mapped, 1 << 20, "IPC-mapped");
  EXPECT_EQ(rt::pointer_info(mapped).kind, MemKind::kDevice);
  CUDA_OK(cudaIpcCloseMemHandle(mapped));
  MPI_Barrier(MPI_COMM_WORLD);
  cudaFree(d);
}

TEST(PointerKind, HostNeedsNoDriverCall) {
  char stack[8] = {};
  std::vector<char> heap(64);
  const uint64_t before = rt::driver_pointer_queries();
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(rt::pointer_info(stack).kind, MemKind::kHost);
    EXPECT_EQ(rt::pointer_info(heap.data()).kind, MemKind::kHost);
    EXPECT_EQ(rt::pointer_info(g_static).kind, MemKind::kHost);
  }
  EXPECT_EQ(rt::driver_pointer_queries(), before);
}

// The attribute end to end (through libdtmpi's MPI_Type_set_attr): a device
// buffer and a host buffer sent with types that say where they live.
TEST(PointerKind, BufferAttribute) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int keyval = dtmpi_buffer_keyval();
  ASSERT_NE(keyval, MPI_KEYVAL_INVALID);
  MPI_Datatype on_device, on_host;
  MPI_Type_dup(MPI_INT, &on_device);
  MPI_Type_dup(MPI_INT, &on_host);
  MPI_Type_set_attr(on_device, keyval, DTMPI_BUFFER_DEVICE(0));
  MPI_Type_set_attr(on_host, keyval, DTMPI_BUFFER_HOST);
  const int n = 1000;
  std::vector<int> host(n), back(n, -1);
  for (int i = 0; i < n; ++i) host[static_cast<size_t>(i)] = i * 3 + me;
  int* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(int)));
  CUDA_OK(cudaMemcpy(d, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  std::vector<int> got(n, -1);
  int* dgot = nullptr;
  CUDA_OK(cudaMalloc(&dgot, n * sizeof(int)));
  MPI_Sendrecv(d, n, on_device, 1 - me, 1, dgot, n, on_device, 1 - me, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CUDA_OK(cudaMemcpy(back.data(), dgot, n * sizeof(int), cudaMemcpyDeviceToHost));
  MPI_Sendrecv(host.data(), n, on_host, 1 - me, 2, got.data(), n, on_host, 1 - me, 2, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(back[static_cast<size_t>(i)], i * 3 + 1 - me) << i;
    ASSERT_EQ(got[static_cast<size_t>(i)], i * 3 + 1 - me) << i;
  }
  void* value = nullptr;
  int flag = 0;
  MPI_Type_get_attr(on_device, keyval, &value, &flag);
  EXPECT_TRUE(flag && value == DTMPI_BUFFER_DEVICE(0));
  MPI_Type_delete_attr(on_device, keyval);
  // without the attribute the device buffer is classified, with the same result
  std::fill(back.begin(), back.end(), -1);
  MPI_Sendrecv(d, n, on_device, 1 - me, 3, dgot, n, on_device, 1 - me, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CUDA_OK(cudaMemcpy(back.data(), dgot, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(back[static_cast<size_t>(i)], i * 3 + 1 - me) << i;
  MPI_Type_free(&on_device);
  MPI_Type_free(&on_host);
  cudaFree(d);
  cudaFree(dgot);
}

// The attribute's point: host memory only the driver could classify (an
// mmap'd page) sent with a "host" type costs no driver query, a dup of a
// predefined type taking the predefined types' fast path; and with the
// attribute on another type, an unhinted type's stack buffer neither.
TEST(PointerKind, BufferAttributeSkipsTheDriver) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Datatype on_host, plain_dup;
  MPI_Type_dup(MPI_BYTE, &on_host);
  MPI_Type_dup(MPI_BYTE, &plain_dup);
  MPI_Type_set_attr(on_host, dtmpi_buffer_keyval(), DTMPI_BUFFER_HOST);
  // a shared page: only the driver can classify it (the mapping watch learns
  // private mappings only), so the control below must see queries
  auto* page = static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(page, MAP_FAILED);
  char stack[8] = {};
  const char* key = "driver pointer queries ";
  auto pingpong = [&](char* buf, MPI_Datatype t, int tag) {
    for (int i = 0; i < 200; ++i) {
      if (me == 0) {
        buf[0] = static_cast<char>(i);
        MPI_Send(buf, 8, t, 1, tag, MPI_COMM_WORLD);
        MPI_Recv(buf, 8, t, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ASSERT_EQ(buf[0], static_cast<char>(i + 1));
      } else {
        MPI_Recv(buf, 8, t, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        buf[0] = static_cast<char>(buf[0] + 1);
        MPI_Send(buf, 8, t, 0, tag, MPI_COMM_WORLD);
      }
    }
  };
  pingpong(page, on_host, 1);  // warm: the memo and the hint learned
  pingpong(stack, plain_dup, 2);
  uint64_t before = dtmpi::testing::stat_value(key);
  pingpong(page, on_host, 3);
  EXPECT_EQ(dtmpi::testing::stat_value(key), before) << "an mmap'd page with DTMPI_BUFFER_HOST asked the driver";
  before = dtmpi::testing::stat_value(key);
  pingpong(stack, plain_dup, 4);
  EXPECT_EQ(dtmpi::testing::stat_value(key), before) << "a stack buffer with a dup type asked the driver";
  // control: without the attribute the page is the driver's to classify
  before = dtmpi::testing::stat_value(key);
  pingpong(page, plain_dup, 5);
  EXPECT_GT(dtmpi::testing::stat_value(key), before) << "the counter does not count: this test cannot fail";
  munmap(page, 4096);
  MPI_Type_free(&on_host);
  MPI_Type_free(&plain_dup);
}

// mmap'd host memory through the mapping watch (runtime/mapped_host.hpp),
// started here in this executable's copy of the runtime (after MPI_Init: the
// MPI's and the driver's threads exist, so each has its own events): learned
// after a driver answer, then no query; through libdtmpi (its own watch,
// started at MPI_Init) a ping-pong on such a page asks the driver no more;
// unmapped and replaced at the very same address by device memory through
// the driver's virtual-memory API (as PyTorch's expandable segments allocate),
// it is device memory at once.
TEST(PointerKind, MmapdHostLearnedThenDeviceAtTheSameAddress) {
  // this copy of the runtime has no interposed mremap of its own (libdtmpi's
  // is the process's and counts into libdtmpi's copy): started without it
  if (!rt::start_mapping_watch(false)) GTEST_SKIP() << "mapping watch off: " << rt::mapping_watch().why_off;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  ASSERT_NE(cuda, nullptr);
  auto sym = [&](const char* name) {
    void* f = dlsym(cuda, name);
    if (!f) ADD_FAILURE() << name << " missing";
    return f;
  };
  using Granularity = CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  using Reserve = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  using Create = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
  using Map = CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  using SetAccess = CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  using Unmap = CUresult (*)(CUdeviceptr, size_t);
  using Release = CUresult (*)(CUmemGenericAllocationHandle);
  using AddressFree = CUresult (*)(CUdeviceptr, size_t);
  auto granularity = reinterpret_cast<Granularity>(sym("cuMemGetAllocationGranularity"));
  auto reserve = reinterpret_cast<Reserve>(sym("cuMemAddressReserve"));
  auto create = reinterpret_cast<Create>(sym("cuMemCreate"));
  auto map = reinterpret_cast<Map>(sym("cuMemMap"));
  auto set_access = reinterpret_cast<SetAccess>(sym("cuMemSetAccess"));
  auto unmap = reinterpret_cast<Unmap>(sym("cuMemUnmap"));
  auto release = reinterpret_cast<Release>(sym("cuMemRelease"));
  auto address_free = reinterpret_cast<AddressFree>(sym("cuMemAddressFree"));
  ASSERT_TRUE(granularity && reserve && create && map && set_access && unmap && release && address_free);
  CUDA_OK(cudaFree(nullptr));  // the primary context current on this thread
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t gran = 0;
  ASSERT_EQ(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  const size_t len = 32 * gran;
  // ordinary host memory aligned to the granularity (the ends trimmed)
  auto* raw = static_cast<char*>(mmap(nullptr, len + gran, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(raw, MAP_FAILED);
  char* host = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + gran - 1) / gran * gran);
  if (host > raw) munmap(raw, static_cast<size_t>(host - raw));
  if (host + len < raw + len + gran) munmap(host + len, static_cast<size_t>(raw + len + gran - (host + len)));
  host[0] = host[len - 1] = 1;
  // learned after driver answers (the first answer reads the maps file)
  int tries = 0;
  while (!rt::provably_host(host) && tries++ < 100000) EXPECT_EQ(rt::pointer_info(host).kind, MemKind::kHost);
  ASSERT_TRUE(rt::provably_host(host)) << "never learned";
  const uint64_t q0 = rt::driver_pointer_queries();
  for (size_t i = 0; i < 1000; ++i) EXPECT_EQ(rt::pointer_info(host + (i * 4093) % len).kind, MemKind::kHost);
  EXPECT_EQ(rt::driver_pointer_queries(), q0) << "a learned mapping still asked the driver";
  expect_span(host, len, "learned mmap'd host");
  // through libdtmpi: its watch (MPI_Init's) learns a private page the same way
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  auto* page = static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(page, MAP_FAILED);
  auto pingpong = [&](int tag) {
    for (int i = 0; i < 500; ++i) {
      if (me == 0) {
        MPI_Send(page, 8, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
        MPI_Recv(page, 8, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(page, 8, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(page, 8, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
      }
    }
  };
  // learned once the queries paid for a read of the maps file (up to ~1000
  // queries in a process with a few hundred mappings)
  const char* key = "driver pointer queries ";
  for (int round = 0; round < 40; ++round) {
    const uint64_t was = dtmpi::testing::stat_value(key);
    pingpong(1);
    int quiet = dtmpi::testing::stat_value(key) == was, all_quiet = 0;
    MPI_Allreduce(&quiet, &all_quiet, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_quiet) break;
  }
  const uint64_t before = dtmpi::testing::stat_value(key);
  pingpong(2);
  EXPECT_EQ(dtmpi::testing::stat_value(key), before) << "libdtmpi asked the driver about a learned mmap'd page";
  munmap(page, 4096);
  // the same addresses become device memory: unmapped (unseen, as glibc's
  // free does it), reserved by the driver at that address, backed and mapped
  ASSERT_EQ(munmap(host, len), 0);
  CUdeviceptr va = 0;
  ASSERT_EQ(reserve(&va, len, gran, reinterpret_cast<CUdeviceptr>(host), 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle handle{};
  ASSERT_EQ(create(&handle, len, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(map(va, len, 0, handle, 0), CUDA_SUCCESS);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(set_access(va, len, &access, 1), CUDA_SUCCESS);
  std::printf("device memory reserved at the freed host address: %s\n",
              va == reinterpret_cast<CUdeviceptr>(host) ? "yes" : "no (the driver chose another)");
  auto* d = reinterpret_cast<char*>(va);
  EXPECT_FALSE(rt::provably_host(d));
  EXPECT_EQ(rt::pointer_info(d).kind, MemKind::kDevice);
  expect_span(d, len, "VMM device memory where learned host memory was");
  EXPECT_FALSE(rt::provably_host(host));
  EXPECT_EQ(unmap(va, len), CUDA_SUCCESS);
  EXPECT_EQ(release(handle), CUDA_SUCCESS);
  EXPECT_EQ(address_free(va, len), CUDA_SUCCESS);
}

}  // namespace
