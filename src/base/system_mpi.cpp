#include "base/system_mpi.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace dtmpi::base {

RealMpi g_real;

void resolve_real_mpi() {
#define DTMPI_RESOLVE(name)                                                     \
  if (!g_real.name)                                                             \
    g_real.name = reinterpret_cast<decltype(g_real.name)>(dlsym(RTLD_NEXT, #name));
  DTMPI_REAL_FUNCTIONS(DTMPI_RESOLVE)
  DTMPI_REAL_FUNCTIONS_LARGE_COUNT(DTMPI_RESOLVE)
  DTMPI_REAL_FUNCTIONS_WIN_F2C(DTMPI_RESOLVE)
#undef DTMPI_RESOLVE
}

void missing_real_symbol(const char* name) {
  // Not a user error: no MPI library is loaded behind dtmpi.
  std::fprintf(stderr, "[dtmpi error] %s: no MPI library found behind libdtmpi (%s)\n", name,
               dlerror());
  std::abort();
}

namespace {
__attribute__((constructor)) void resolve_at_load() { resolve_real_mpi(); }
}  // namespace

}  // namespace dtmpi::base
