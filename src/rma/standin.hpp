// GPU buffers in operations on windows the system MPI serves (host windows
// under DTMPI_RMA=auto): the system MPI is not handed the device pointer but a
// host stand-in -- the buffer packed with its own datatype into host memory,
// described as that many elements of its one predefined type (MPI_BYTE for a
// type mixing several; MPI's homogeneous systems accept it for put and get).
// An origin buffer is packed when the operation is issued; a result buffer
// (get, get-accumulate, fetch-and-op, compare-and-swap) is unpacked into GPU
// memory when the window's synchronization call that completes it returns
// (or, for MPI_R* operations, when their request completes). The stand-ins
// live until then.
#pragma once
#include <mpi.h>

#include "base/result.hpp"

namespace dtmpi::rma {

struct StandIn {
  void* ptr = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

// Whether `buf` is GPU memory that the system MPI cannot take.
bool needs_stand_in(const void* buf);
// A host stand-in for (buf, count, type) on the system window `win`, for an
// operation to `target`: filled from the GPU buffer (`read`) and/or unpacked
// into it when the operation completes (`write_back`).
Result<StandIn> stand_in(MPI_Win win, int target, const void* buf, int count, MPI_Datatype type, bool read,
                         bool write_back);
// After a synchronization call on the system window `win` succeeded: the
// stand-ins of the operations it completed (those to `target`; every one with
// kAllTargets) are written back into GPU memory and released.
constexpr int kAllTargets = -3;
Status stand_ins_completed(MPI_Win win, int target);
// An MPI_R* request of the system MPI whose last stand-in (the latest made)
// must be written back when it completes: replaced by a request of dtmpi's
// that does so.
Status wrap_request(MPI_Win win, MPI_Request* request);

}  // namespace dtmpi::rma
