// The one-sided protocol dtmpi runs over the system MPI's point-to-point
// (docs/rma.md): every operation and every synchronization message is one
// message from origin to target on the window's private communicator, tag
// kTagRequest, so the target handles one origin's messages in the order they
// were issued (MPI's non-overtaking rule); what comes back (data of a get,
// a lock grant, an acknowledgement) is one message on kTagReply, sent in the
// order the target handled the requests, and received by the origin into
// receives it posted in issue order.
#pragma once
#include <cstdint>

namespace dtmpi::rma {

inline constexpr int kTagRequest = 1;
inline constexpr int kTagReply = 2;

enum class Kind : uint32_t {
  kPut = 1,
  kGet,
  kAccumulate,
  kGetAccumulate,
  kCompareSwap,
  kLock,      // lock_type: MPI_LOCK_SHARED / MPI_LOCK_EXCLUSIVE; replied when granted
  kUnlock,    // releases (unless nocheck), replied when everything before it is applied
  kFlush,     // replied when everything before it is applied
  kPost,      // PSCW: the target opened its exposure epoch to the receiver
  kComplete,  // PSCW: the origin's access epoch to the receiver ended
  kFence,     // the origin's last message of this fence epoch to the receiver
};

// Fixed part of a request; a plan definition (type/plan_wire.hpp) and the
// payload follow it in the same message.
struct RequestHeader {
  Kind kind;
  int32_t lock_type = 0;    // kLock: MPI_LOCK_*; kUnlock: 1 when the lock was taken nocheck
  int64_t disp = 0;         // target displacement in units (dynamic windows: an address)
  int64_t count = 0;        // elements of the target plan
  int64_t payload = 0;      // payload bytes after the plan
  int32_t plan_id = -1;     // the target layout: an id of this origin's plans at this target
  int32_t plan_bytes = 0;   // > 0: the plan of plan_id is defined here (first use)
  int32_t element = -1;     // accumulates: the predefined element type (rma/named.hpp)
  int32_t op = -1;          // accumulates: the op (rma/named.hpp)
};

}  // namespace dtmpi::rma
