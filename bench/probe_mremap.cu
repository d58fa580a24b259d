// Issue 29's mapping watch misses mremap (the kernel does not record it), and
// libcuda imports mremap: how often does the CUDA driver call it, and by
// which path? Counts mremap system calls not made through the PLT (a seccomp
// filter traps them; the handler re-issues them with a marker argument the
// filter lets through) and those made through it (an mremap defined here, as
// libdtmpi defines one), over a broad CUDA workload: device allocations up to
// 8 GiB, 200 allocate/free pairs, managed, pinned and registered memory,
// streams and copies, the stream-ordered pool, the virtual-memory API, an IPC
// handle, a device reset. Not part of the build (x86-64 Linux only):
//   nvcc -O2 -std=c++17 bench/probe_mremap.cu -o probe_mremap -lcuda && ./probe_mremap
// Result: bench/results/pointer-classification-1xh100-2026-11-27.txt.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <signal.h>
#include <unistd.h>
#include <cstddef>
#include <cstdio>
#include <cstdarg>
#include <atomic>
#include <vector>
#include <dlfcn.h>
#include <cuda.h>
#include <cuda_runtime.h>
static std::atomic<long> g_sys{0}, g_plt{0};
static const long kMagic = 0x5eedull;
extern "C" void* mremap(void* o, size_t os, size_t ns, int fl, ...) noexcept {
  void* na = nullptr;
  if (fl & MREMAP_FIXED) { va_list ap; va_start(ap, fl); na = va_arg(ap, void*); va_end(ap); }
  g_plt++;
  return reinterpret_cast<void*>(syscall(SYS_mremap, o, os, ns, fl, na, kMagic));
}
static void on_sigsys(int, siginfo_t* si, void* uc_) {
  auto* uc = static_cast<ucontext_t*>(uc_);
  g_sys++;
  greg_t* r = uc->uc_mcontext.gregs;
  Dl_info at{}, caller{};
  dladdr(reinterpret_cast<void*>(r[REG_RIP]), &at);
  void* ret = *reinterpret_cast<void**>(r[REG_RSP]);
  dladdr(ret, &caller);
  if (g_sys <= 20)
    fprintf(stderr, "raw mremap at %s:%s, [rsp] in %s:%s\n", at.dli_fname ? at.dli_fname : "?", at.dli_sname ? at.dli_sname : "?",
            caller.dli_fname ? caller.dli_fname : "?", caller.dli_sname ? caller.dli_sname : "?");
  r[REG_RAX] = syscall(SYS_mremap, r[REG_RDI], r[REG_RSI], r[REG_RDX], r[REG_R10], r[REG_R8], kMagic);
  (void)si;
}
int main() {
  struct sigaction sa{}; sa.sa_sigaction = on_sigsys; sa.sa_flags = SA_SIGINFO; sigaction(SIGSYS, &sa, nullptr);
  sock_filter g[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mremap, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[5])),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)kMagic, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof g / sizeof g[0]), g};
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) { perror("seccomp"); return 1; }
  // self-check: a raw mremap is trapped and counted
  void* t = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  syscall(SYS_mremap, t, 1 << 16, 1 << 17, MREMAP_MAYMOVE);
  printf("self-check: raw %ld (expect 1)\n", g_sys.load());
  g_sys = 0; g_plt = 0;
  cuInit(0); cudaFree(0);
  std::vector<void*> d;
  for (size_t s = 256; s <= (size_t(8) << 30); s *= 4) { void* p; if (cudaMalloc(&p, s) == cudaSuccess) d.push_back(p); }
  for (int i = 0; i < 200; ++i) { void* p; cudaMalloc(&p, (i * 7919) % (64 << 20) + 1); cudaFree(p); }
  for (void* p : d) cudaFree(p);
  for (int i = 0; i < 50; ++i) { void *m, *h; cudaMallocManaged(&m, (i + 1) << 16); cudaHostAlloc(&h, (i + 1) << 16, 0); cudaFree(m); cudaFreeHost(h); }
  for (int i = 0; i < 20; ++i) { void* h = malloc(8 << 20); cudaHostRegister(h, 8 << 20, 0); cudaHostUnregister(h); free(h); }
  cudaStream_t st[8]; for (auto& s : st) cudaStreamCreate(&s);
  void *a, *b; cudaMalloc(&a, 64 << 20); cudaMalloc(&b, 64 << 20);
  for (int i = 0; i < 100; ++i) cudaMemcpyAsync(a, b, 64 << 20, cudaMemcpyDeviceToDevice, st[i % 8]);
  cudaDeviceSynchronize();
  cudaMemPool_t pool; cudaDeviceGetDefaultMemPool(&pool, 0);
  for (int i = 0; i < 100; ++i) { void* p; cudaMallocAsync(&p, (i + 1) << 20, st[0]); cudaFreeAsync(p, st[0]); }
  cudaStreamSynchronize(st[0]);
  CUmemAllocationProp prop{}; prop.type = CU_MEM_ALLOCATION_TYPE_PINNED; prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = 0;
  size_t gran; cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  for (int i = 0; i < 20; ++i) {
    CUdeviceptr va; cuMemAddressReserve(&va, 64 * gran, 0, 0, 0);
    CUmemGenericAllocationHandle h; cuMemCreate(&h, 64 * gran, &prop, 0); cuMemMap(va, 64 * gran, 0, h, 0);
    CUmemAccessDesc acc{}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE; cuMemSetAccess(va, 64 * gran, &acc, 1);
    cuMemUnmap(va, 64 * gran); cuMemRelease(h); cuMemAddressFree(va, 64 * gran);
  }
  cudaIpcMemHandle_t ih; cudaIpcGetMemHandle(&ih, a);
  cudaDeviceReset();
  printf("mremap system calls during the CUDA workload: not through the PLT %ld, through the PLT (interposed) %ld\n", g_sys.load(), g_plt.load());
  return 0;
}
