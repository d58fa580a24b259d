// One-sided operations on dtmpi's windows (docs/rma.md). Each is one request
// message to the target: the origin's data packed by dtmpi's packers from
// any memory (host or GPU), the target's layout as a plan the target keeps
// per origin, applied by the target's progress (GPU unpacks for device
// windows). Accumulates of one target are applied one at a time, element by
// element, in the order each origin issued them: the standard's atomicity and
// ordering. Replies (get data, old values) are unpacked into the origin
// buffer when they arrive.
#pragma once
#include <mpi.h>

#include "base/result.hpp"
#include "rma/window.hpp"

namespace dtmpi::rma {

struct Side {
  void* buf;
  int64_t count;
  MPI_Datatype type;
};
struct TargetSide {
  int rank;
  MPI_Aint disp;
  int64_t count;
  MPI_Datatype type;
};

// `request`: null for the plain forms; else the MPI_R* request (complete when
// the operation is complete at the origin).
Status put(Window& w, Side origin, TargetSide target, MPI_Request* request);
Status get(Window& w, Side origin, TargetSide target, MPI_Request* request);
Status accumulate(Window& w, Side origin, TargetSide target, MPI_Op op, MPI_Request* request);
Status get_accumulate(Window& w, Side origin, Side result, TargetSide target, MPI_Op op, MPI_Request* request);
Status compare_and_swap(Window& w, const void* origin, const void* compare, void* result, MPI_Datatype type,
                        int target, MPI_Aint disp);

}  // namespace dtmpi::rma
