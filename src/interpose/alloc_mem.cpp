// MPI_Alloc_mem / MPI_Free_mem (issue 29): memory MPI_Alloc_mem returns is
// host memory whose whole lifetime dtmpi sees -- the program may release it
// only with MPI_Free_mem -- so it is added to the host ranges
// (runtime/host_ranges.hpp: add_host_range) and classified without a driver
// call from then on, dropped again before the system MPI frees it.
//
// Every way the memory can be freed is seen here: MPI_Free_mem, and
// PMPI_Free_mem, which Open MPI's Fortran bindings (and a program or PMPI
// tool calling the profiling name) use; MPI_Finalize drops every entry
// (interpose/init.cpp), after which no MPI call may pass a buffer. Memory of
// MPI_Alloc_mem's Fortran bindings (PMPI_Alloc_mem) is simply not added: the
// driver is asked for it, as before.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "interpose/export.hpp"
#include "base/system_mpi.hpp"
#include "runtime/host_ranges.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/pointer_kind.hpp"

namespace {

namespace rt = dtmpi::runtime;

// The next PMPI_Free_mem after dtmpi's. Not REAL(MPI_Free_mem): a PMPI tool
// stacked behind dtmpi (LD_PRELOAD=libdtmpi.so:libtool.so) implements
// MPI_Free_mem by calling PMPI_Free_mem, which is dtmpi's -- calling its
// MPI_Free_mem from here would recurse.
using FreeMem = int (*)(void*);
FreeMem next_pmpi_free_mem() {
  static std::atomic<FreeMem> f{nullptr};
  FreeMem g = f.load(std::memory_order_acquire);
  if (!g) {
    g = reinterpret_cast<FreeMem>(dlsym(RTLD_NEXT, "PMPI_Free_mem"));
    f.store(g, std::memory_order_release);
  }
  return g;
}

// Whether the driver calls [p, p + bytes) not CUDA memory: its first and last
// byte. MPI_Alloc_mem returns one allocation, of one kind of memory; pinned
// memory (cudaHostAlloc'd by the MPI) is kPinnedHost here and not added, so
// that pointer_info keeps answering kPinnedHost for it as before.
bool plain_host_memory(const void* p, MPI_Aint bytes) {
  const char* c = static_cast<const char*>(p);
  return rt::pointer_info_exact(c).kind == rt::MemKind::kHost &&
         rt::pointer_info_exact(c + bytes - 1).kind == rt::MemKind::kHost;
}

}  // namespace

DTMPI_EXPORT int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
  const int rc = REAL(MPI_Alloc_mem)(size, info, baseptr);
  if (rc != MPI_SUCCESS || size <= 0 || !baseptr || !rt::active()) return rc;
  void* mem = nullptr;
  std::memcpy(&mem, baseptr, sizeof mem);  // baseptr: the address of a pointer (MPI's void*)
  if (mem && plain_host_memory(mem, size)) rt::add_host_range(mem, static_cast<size_t>(size));
  return rc;
}

// Dropped before the memory goes: from then on its addresses can be anything,
// device memory included.
DTMPI_EXPORT int MPI_Free_mem(void* base) {
  rt::drop_host_range(base);
  return REAL(MPI_Free_mem)(base);
}

DTMPI_EXPORT int PMPI_Free_mem(void* base) {
  rt::drop_host_range(base);
  if (FreeMem f = next_pmpi_free_mem()) return f(base);
  return REAL(MPI_Free_mem)(base);
}
