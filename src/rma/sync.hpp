// Synchronization of dtmpi's windows (docs/rma.md): fence, post-start-
// complete-wait, and passive target (lock/unlock, lock_all/unlock_all,
// flush*, sync). Every epoch's end includes the GPU work of its operations:
// a target applies each request (GPU unpacks included) before it handles
// the next, and answers unlock, flush and the fence only after them.
#pragma once
#include <mpi.h>

#include "base/result.hpp"
#include "rma/window.hpp"

namespace dtmpi::rma {

// Every request between the previous fence and now applied at its target,
// every reply of this rank's received (MPI_Win_fence, MPI_Win_free).
Status fence_sync(Window& w);
Status fence(Window& w, int assert_flags);
Status post(Window& w, MPI_Group group, int assert_flags);
Status start(Window& w, MPI_Group group, int assert_flags);
Status complete(Window& w);
Status wait(Window& w);
Status test(Window& w, int* flag);
Status lock(Window& w, int lock_type, int rank, int assert_flags);
Status unlock(Window& w, int rank);
Status lock_all(Window& w, int assert_flags);
Status unlock_all(Window& w);
Status flush(Window& w, int rank);
Status flush_all(Window& w);
Status flush_local(Window& w, int rank);
Status flush_local_all(Window& w);

}  // namespace dtmpi::rma
