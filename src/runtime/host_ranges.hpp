// Host memory that the process's own layout proves is not CUDA memory, told
// without a system call or a CUDA driver call (issue 29: the driver's pointer
// query costs 100-150 ns, a quarter of a host ping-pong).
//
// A CUDA allocation (device, managed, pinned by cudaHostAlloc, mapped from
// another process over IPC) is a mapping the driver makes with mmap. The
// kernel never places a new mapping over an existing one unless asked to
// (MAP_FIXED), and the driver never asks over memory it does not own. So an
// address inside a region the process holds as ordinary memory for as long as
// it is asked about cannot be CUDA memory:
//   * the brk heap, [start of the heap, sbrk(0)): glibc's main arena, where
//     malloc puts blocks below its mmap threshold (128 KiB);
//   * the calling thread's live stack, from the current frame up to the
//     stack's top (checked against the thread's stack bounds, so a call from
//     a coroutine or signal stack is not taken for it);
//   * the main executable's loaded segments (static and global data), which
//     are never unmapped.
// Anything else (mmap'd buffers, other threads' arenas and stacks, shared
// libraries) is not proven host here; runtime::pointer_info asks the driver.
// Host memory page-locked later with cudaHostRegister stays host memory to
// MPI; that it is pinned is not seen here (pointer_info_exact sees it).
#pragma once
#include <cstdint>

namespace dtmpi::runtime {

// True if `p` lies in one of the regions above. Lock-free after the first
// call, which learns the heap's start and the executable's segments once.
bool provably_host(const void* p);

// What provably_host knows, for tests and dtmpi-info.
struct HostRanges {
  uintptr_t heap_lo = 0, heap_hi = 0;    // heap_hi: sbrk(0) now
  uintptr_t stack_lo = 0, stack_hi = 0;  // the calling thread's stack (0, 0: unknown)
  int image_segments = 0;                // loaded segments of the main executable
};
HostRanges host_ranges();

}  // namespace dtmpi::runtime
