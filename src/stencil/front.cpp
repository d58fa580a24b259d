// Whether dtmpi is the MPI in front of this process, which decides whether a
// device domain may post its messages on device buffers (PeerPath::kAuto).
// dtmpi::stencil is a static library with its own copy of dtmpi's runtime:
// that copy's flag is set only where the stencil is linked into the same
// image as dtmpi's MPI_* entry points (dtmpi-bench). In an application that
// preloads libdtmpi or links it before -lmpi, libdtmpi's runtime is another
// copy, asked through the symbol it exports (include/dtmpi/dtmpi.h), as any
// program may ask it. Without libdtmpi the symbol is absent: a plain MPI.
#include <dlfcn.h>

#include "runtime/lifecycle.hpp"
#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {

const char* to_string(PeerPath p) {
  switch (p) {
    case PeerPath::kAuto: return "auto";
    case PeerPath::kStaged: return "staged";
    case PeerPath::kDevice: return "device";
    case PeerPath::kHost: return "host";
  }
  return "?";
}

bool dtmpi_in_front() {
  if (runtime::initialized()) return true;
  using Query = int (*)();
  // RTLD_DEFAULT: the first definition in the process's global scope, the
  // one an application's own call of dtmpi_initialized() would reach
  void* sym = dlsym(RTLD_DEFAULT, "dtmpi_initialized");
  return sym != nullptr && reinterpret_cast<Query>(sym)() == 1;
}

}  // namespace dtmpi::stencil
