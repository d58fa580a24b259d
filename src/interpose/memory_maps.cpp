// mremap: the one change of the address space the kernel's mapping records
// miss (runtime/mapped_host.hpp), and the CUDA driver imports it. dtmpi
// defines it so that each call, after the system call returns, ends the
// trust in every learned host mapping; the mapping watch starts only where
// this definition is the one the process's libraries call (checked at load).
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>

#include "interpose/export.hpp"
#include "runtime/mapped_host.hpp"

DTMPI_EXPORT void* mremap(void* old_address, size_t old_size, size_t new_size, int flags, ...) noexcept {
  void* new_address = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_address = va_arg(ap, void*);
    va_end(ap);
  }
  // the system call itself (glibc's mremap is this wrapper; no dlsym, which
  // could allocate, on the way)
  const long r = syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address);
  // after it returned: a check that sees the moved mapping sees the count
  dtmpi::runtime::note_unrecorded_mapping_change();
  return reinterpret_cast<void*>(r);
}

namespace dtmpi::interpose {

// Whether a library's call to mremap reaches the definition above: UCX's
// memory hooks (libucm, in relocation mode) rewrite every loaded object's GOT
// entry for mremap to their own handler, which calls the C library's -- past
// this one, uncounted. Called through this library's own GOT entry (patched
// alike), on a scratch page remapped onto itself; the count must move.
bool mremap_calls_reach_dtmpi() {
  void* (*volatile through_got)(void*, size_t, size_t, int, ...) noexcept = &::mremap;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const uint64_t before = runtime::mremap_count();
  void* q = through_got(p, page, page, 0);
  const bool reached = runtime::mremap_count() != before;
  munmap(q == MAP_FAILED ? p : q, page);
  return reached;
}

}  // namespace dtmpi::interpose

namespace {

// Whether the process's mremap (what libcuda's calls bind to) is the one above:
// the object defining the symbol the default lookup finds is this library.
__attribute__((constructor)) void check_mremap_is_ours() {
  Dl_info found{}, ours{};
  // libcuda's reference is versioned (mremap@GLIBC_2.2.5); libdtmpi's
  // definition is not (no version script), and the dynamic linker binds a
  // versioned reference to the first unversioned global definition in the
  // lookup order -- the one dlsym finds. (dlvsym would not say: it asks for
  // an exact version match.) A version script added to libdtmpi must keep
  // mremap unversioned.
  void* global = dlsym(RTLD_DEFAULT, "mremap");
  const bool seen = global && dladdr(global, &found) && dladdr(reinterpret_cast<void*>(&check_mremap_is_ours), &ours) &&
                    found.dli_fbase == ours.dli_fbase;
  dtmpi::runtime::set_mremap_seen(seen && dtmpi::interpose::mremap_calls_reach_dtmpi());
}

}  // namespace
