// dtmpi-probe-pointer-query: what classifying one buffer costs (issue 29):
// the CUDA driver's pointer query (cuPointerGetAttributes, memory type and
// buffer id, as dtmpi asks) against the address check of
// runtime/host_ranges (brk heap, the caller's stack), for a buffer of each
// kind; and where the driver put its allocations (never inside the heap or
// the stack). Mean of 10^6 calls each. Run on the GPU machine.
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

uintptr_t heap_lo, stack_lo, stack_hi;

// The check of runtime/host_ranges.cpp, without its executable segments.
__attribute__((noinline)) bool provably_host(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a >= heap_lo && a < reinterpret_cast<uintptr_t>(sbrk(0))) return true;
  const auto frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return frame >= stack_lo && frame < stack_hi && a >= frame && a < stack_hi;
}

template <class F>
double mean_ns(F f) {
  constexpr int kCalls = 1000000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls;
}

}  // namespace

int main() {
  cudaFree(nullptr);  // the context, as an application has one
  char line[512];
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    while (std::fgets(line, sizeof line, f))
      if (std::strstr(line, "[heap]")) heap_lo = std::strtoul(line, nullptr, 16);
    std::fclose(f);
  }
  pthread_attr_t attr;
  void* stack = nullptr;
  size_t stack_size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &stack, &stack_size);
  pthread_attr_destroy(&attr);
  stack_lo = reinterpret_cast<uintptr_t>(stack);
  stack_hi = stack_lo + stack_size;

  char on_stack[8] = {};
  char* heap = static_cast<char*>(std::malloc(64));
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *device = nullptr, *managed = nullptr, *pinned = nullptr;
  cudaMalloc(&device, 1 << 20);
  cudaMallocManaged(&managed, 1 << 16);
  cudaHostAlloc(&pinned, 4096, cudaHostAllocDefault);
  const char* names[] = {"stack", "heap", "mmap'd page", "device", "managed", "pinned"};
  void* ptrs[] = {on_stack, heap, page, device, managed, pinned};
  unsigned memtype = 0;
  unsigned long long id = 0;
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID};
  void* values[] = {&memtype, &id};
  volatile int sink = 0;
  std::printf("%-12s %-16s %-8s %-14s %14s %14s\n", "buffer", "address", "memtype", "provably host", "driver query", "address check");
  for (int i = 0; i < 6; ++i) {
    const auto addr = reinterpret_cast<CUdeviceptr>(ptrs[i]);
    memtype = 0;
    cuPointerGetAttributes(2, which, values, addr);
    const unsigned kind = memtype;
    const double query = mean_ns([&] { cuPointerGetAttributes(2, which, values, addr); });
    const double check = mean_ns([&] { sink = sink + provably_host(ptrs[i]); });
    std::printf("%-12s %-16p %-8u %-14s %11.1f ns %11.1f ns\n", names[i], ptrs[i], kind,
                provably_host(ptrs[i]) ? "yes" : "no", query, check);
  }
  std::printf("heap %#lx-%#lx, stack %#lx-%#lx\n", static_cast<unsigned long>(heap_lo),
              reinterpret_cast<unsigned long>(sbrk(0)), static_cast<unsigned long>(stack_lo),
              static_cast<unsigned long>(stack_hi));
  cudaFreeHost(pinned);
  cudaFree(managed);
  cudaFree(device);
  munmap(page, 4096);
  std::free(heap);
  return 0;
}
