// Windows dtmpi serves (docs/rma.md): their memory, their peers' sizes, the
// state of their epochs at this rank as origin and as target, and the
// registry that tells dtmpi's windows from the system MPI's by handle.
//
// A window dtmpi serves has a handle of dtmpi's own making (the system MPI
// never sees it): dtmpi's windows live where the system MPI's one-sided
// components cannot (device memory they would dereference; MPIs whose
// MPI_Win_create fails, as Open MPI 4.1.6's default components do on the GPU
// machines), so every MPI_Win_* call is interposed and answers for dtmpi's
// handles itself (interpose/rma_*.cpp).
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "rma/message_bytes.hpp"
#include "rma/protocol.hpp"
#include "runtime/pointer_kind.hpp"
#include "transport/ipc.hpp"
#include "type/plan.hpp"

namespace dtmpi::rma {

// A message this rank sent (request or reply) and its bytes, kept until the
// system MPI is done with them.
struct Outgoing {
  MPI_Request request = MPI_REQUEST_NULL;
  MessageBytes bytes;
};

// A reply this rank (as origin) waits for: its receive, and what to do with
// the bytes -- unpack a get's data into the origin buffer, or nothing (a
// grant or acknowledgement).
struct PendingReply {
  MPI_Request request = MPI_REQUEST_NULL;
  MessageBytes bytes;
  std::shared_ptr<const type::PackPlan> plan;  // null: a control reply
  int64_t count = 0;
  void* user = nullptr;
  runtime::PointerInfo user_info;
  uint64_t seq = 0;
};

// This rank's view of one peer of a window.
struct Peer {
  int64_t size = 0;       // the peer's window size in bytes (not for dynamic windows)
  int disp_unit = 1;
  // as origin
  std::map<const type::PackPlan*, int32_t> plan_ids;  // plans this peer has been sent
  std::vector<std::shared_ptr<const type::PackPlan>> plans_kept;  // keeps those keys alive
  std::deque<PendingReply> replies;  // in the order the peer will send them
  uint64_t replies_posted = 0, replies_done = 0;
  bool sent_in_epoch = false;        // a fence epoch's request went to this peer
  bool sent_since_flush = false;
  // an accumulate went to this peer as a message and is not known applied:
  // later accumulates follow it as messages (MPI orders one origin's
  // accumulates to a location; a direct atomic could overtake it)
  bool accumulates_queued = false;
  // accumulates sent as messages so far: a synchronization clears
  // accumulates_queued only if none went out while it waited (another
  // thread's, in a shared epoch, may not be applied yet: let_others_in())
  uint64_t accumulates_sent = 0;
  int lock_type = 0;                 // 0: no lock held on this peer
  bool lock_nocheck = false;
  // the same node: its window memory mapped over CUDA IPC (rma/direct.hpp)
  int world = -1;
  bool same_node = false;
  bool has_region = false;
  transport::IpcRegion region;
  // as target
  std::vector<std::shared_ptr<const type::PackPlan>> plans;  // this peer's plans by id
  int posts = 0;      // PSCW: posts received from this peer not yet consumed by a start
  int completes = 0;  // PSCW: completes received not yet consumed by a wait
};

// Memory attached to a dynamic window.
struct Region {
  uintptr_t base = 0;
  int64_t bytes = 0;
  runtime::PointerInfo info;
};

enum class Flavor { kCreate = MPI_WIN_FLAVOR_CREATE, kAllocate = MPI_WIN_FLAVOR_ALLOCATE,
                    kDynamic = MPI_WIN_FLAVOR_DYNAMIC };

// A keyval's delete callback: C's, or another language's through its glue
// (ForeignDeleteCall, below).
using ForeignDeleteCall = int (*)(void* fn, MPI_Win win, int keyval, void* value, void* extra);
struct KeyvalCallbacks {
  MPI_Win_delete_attr_function* del = nullptr;
  void* extra = nullptr;
  ForeignDeleteCall foreign = nullptr;
  void* foreign_fn = nullptr;
};
// An attribute of a window: its value and its keyval's callbacks, copied
// when it was set (they outlive MPI_Win_free_keyval).
struct Attribute {
  void* value = nullptr;
  KeyvalCallbacks callbacks;
};

struct Window {
  MPI_Win handle = MPI_WIN_NULL;
  // The window's Fortran INTEGER handle (MPI_Win_c2f): kFortranBase - id, a
  // negative number, which Open MPI's own MPI_Win_c2f never returns (its
  // indices into its handle table are >= 0). MPICH's handles are ints already.
  MPI_Fint fortran = 0;
  MPI_Comm comm = MPI_COMM_NULL;  // private duplicate of the creating communicator
  int rank = 0, size = 0;
  // its members' ranks in MPI_COMM_WORLD, ascending (empty where some member
  // is not in this world: spawned processes) -- windows_cover()
  std::vector<int> world_members;
  Flavor flavor = Flavor::kCreate;
  // local memory and the attribute values MPI_Win_get_attr points at
  void* base = nullptr;
  MPI_Aint bytes = 0;
  int disp_unit = 1;
  int flavor_attr = MPI_WIN_FLAVOR_CREATE;
  int model_attr = MPI_WIN_SEPARATE;
  runtime::PointerInfo info;
  bool free_base = false;  // MPI_Win_allocate in DTMPI_RMA=all: memory from MPI_Alloc_mem
  std::vector<Region> regions;
  // sized once at creation; a deque never relocates its elements (a Peer's
  // messages in flight are move-only)
  std::deque<Peer> peers;
  // as target: the lock and who waits for it
  int exclusive_holder = -1;
  int shared_holders = 0;
  std::deque<std::pair<int, int>> lock_queue;  // (origin, lock type)
  int fence_marks = 0;                         // kFence messages received, not yet consumed
  bool fence_epoch = false;                    // a fence opened an epoch (no MPI_MODE_NOSUCCEED)
  std::vector<int> post_group, start_group;    // PSCW groups in this window's ranks
  std::deque<Outgoing> outgoing;
  // An error of this rank's part of the protocol that no call was returning
  // when it happened (a reply that failed to unpack, a request from a peer
  // this rank could not apply): the next synchronization call on the window
  // returns it.
  int deferred_error = MPI_SUCCESS;
  std::string deferred_what;
  // MPI object state the application sets
  MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
  // holds a predefined error handler for MPI_Win_get_errhandler, which must
  // return a reference the application frees (Open MPI counts references of
  // the predefined handlers too: one given out without a count is freed for good)
  MPI_Comm errhandler_holder = MPI_COMM_NULL;
  std::string name;
  std::map<int, Attribute> attributes;
  // the info hints given at creation and by MPI_Win_set_info (key -> value)
  std::map<std::string, std::string> hints;
};

// An accumulate to `p` goes as a message: later ones follow it (below).
inline void queue_accumulate(Peer& p) {
  p.accumulates_queued = true;
  ++p.accumulates_sent;
}
// After a synchronization that applied everything sent to `p` up to the
// moment `sent_then` was read: accumulates_queued cleared unless another
// went out meanwhile.
inline void accumulates_applied(Peer& p, uint64_t sent_then) {
  if (p.accumulates_sent == sent_then) p.accumulates_queued = false;
}

// The one lock of dtmpi's one-sided layer (recursive: progress runs inside
// the calls that hold it).
std::recursive_mutex& rma_mutex();
// Holds rma_mutex() for a scope, counting this thread's holds, so that a
// blocking wait can let go of it entirely (let_others_in()).
class RmaLock {
 public:
  RmaLock();
  ~RmaLock();
  RmaLock(const RmaLock&) = delete;
  RmaLock& operator=(const RmaLock&) = delete;
};
// Called by every wait for other ranks (wait_until, a request's wait): lets
// go of this thread's holds of rma_mutex() for a moment, so that the other
// threads' windows move on meanwhile -- a thread blocked in one window's
// fence while holding the lock kept another thread from the fence of its
// window that the other ranks were waiting for (MPICH's
// threads/rma/multifence hung). The caller's window state is re-read after.
void let_others_in();

// A handle's bits as a map key: Open MPI's handles are pointers, MPICH's
// ints (a template, so the other MPI's branch is discarded).
template <class Handle>
uintptr_t handle_bits(Handle h) {
  if constexpr (std::is_pointer_v<Handle>) return reinterpret_cast<uintptr_t>(h);
  else return static_cast<uintptr_t>(static_cast<uint32_t>(h));
}

// Windows dtmpi serves right now (a relaxed load: zero keeps every MPI_Win_*
// call of a program without such windows a plain forward).
extern std::atomic<int> g_windows;
// The window behind `win`, or null when the system MPI's.
Window* find(MPI_Win win);
// The window whose Fortran handle is `f` (Window::fortran), or null.
Window* find_fortran(MPI_Fint f);
inline constexpr MPI_Fint kFortranBase = -0x40000000;

// --- Creation (collective over `comm`) ---------------------------------------

// Whether dtmpi serves a window over `base` (DTMPI_RMA; asks every rank).
Result<bool> serve_create(const void* base, MPI_Aint size, MPI_Comm comm);
// The same for windows MPI allocates (host memory) and dynamic windows.
Result<bool> serve_allocate(MPI_Comm comm);
Result<bool> serve_dynamic(MPI_Comm comm);
Status create(void* base, MPI_Aint size, int disp_unit, MPI_Comm comm, Flavor flavor, MPI_Win* win);
Status allocate(MPI_Aint size, int disp_unit, MPI_Comm comm, void* baseptr, MPI_Win* win);
Status attach(Window& w, void* base, MPI_Aint size);
Status detach(Window& w, const void* base);
// Completes what is in flight, frees the window (collective) and sets *win to MPI_WIN_NULL.
Status free_window(MPI_Win* win);

// --- Attributes, names, error handlers ---------------------------------------

Status get_attr(Window& w, int keyval, void* value, int* flag);
Status set_attr(Window& w, int keyval, void* value);
Status delete_attr(Window& w, int keyval);
void note_keyval(int keyval, MPI_Win_delete_attr_function* del, void* extra);
void forget_keyval(int keyval);
void note_errhandler(MPI_Errhandler e, MPI_Win_errhandler_function* fn);
// Callbacks written in another language (Fortran procedures take every
// argument by reference and handles as Fortran INTEGERs): dtmpi's windows call
// `call(fn, ...)` with C's arguments, and `call` (the Fortran glue) converts
// them and calls the procedure `fn`. Noting one replaces what the C entry
// point noted for the same keyval or handler (MPICH's mpif.h binding creates
// them through the C function).
using ForeignErrhandlerCall = void (*)(void* fn, MPI_Win* win, int* code);
void note_foreign_keyval(int keyval, ForeignDeleteCall call, void* fn, void* extra);
void note_foreign_errhandler(MPI_Errhandler e, ForeignErrhandlerCall call, void* fn);
Status set_errhandler(Window& w, MPI_Errhandler e);
// Info: the hints of `info` (creation, MPI_Win_set_info) are kept;
// MPI_Win_get_info returns them with the defaults of the standard's window
// hints dtmpi follows for the keys not given (no_locks, accumulate_ordering,
// accumulate_ops, same_size, same_disp_unit).
Status note_hints(Window& w, MPI_Info info);
Status get_info(const Window& w, MPI_Info* info);
Status get_errhandler(Window& w, MPI_Errhandler* e);
// Calls w's error handler with `code` (MPI_ERRORS_ARE_FATAL aborts); returns code.
int raise(Window& w, int code);

// --- Progress -----------------------------------------------------------------

// Handles every request that arrived at any window, completes sends and
// replies; never blocks. Called by every dtmpi entry while windows exist.
void progress();
// progress() until `done()` holds.
template <class F>
void wait_until(F done);
void wait_until_fn(bool (*done)(void*), void* ctx);
template <class F>
void wait_until(F done) {
  wait_until_fn([](void* c) { return (*static_cast<F*>(c))(); }, &done);
}

// Every window dtmpi serves (changed and read under rma_mutex()).
std::vector<Window*>& window_list();

// --- Which collectives must progress the windows (cover.cpp) ----------------

// The ranks in MPI_COMM_WORLD of `comm`'s members, ascending; empty for an
// intercommunicator or where a member is not in this world.
std::vector<int> world_members_of(MPI_Comm comm);
// Whether some window dtmpi serves has every process of `comm` among its
// members. Every rank of `comm` is then a member of that window, so every
// rank answers alike -- the condition under which a blocking collective on
// `comm` may take its non-blocking form to progress the windows (a blocking
// and a non-blocking collective do not match each other). Cached per
// communicator (an attribute) until a window is created or freed.
bool windows_cover(MPI_Comm comm);
// A window was registered or freed: the cached answers are stale.
void windows_changed();
// Whether dtmpi's progress thread serves the windows while they exist
// (MPI_THREAD_MULTIPLE, DTMPI_RMA_THREAD not off; progress.cpp): then no
// blocking call needs another form to progress them.
bool progress_thread_serves();

// Sends a request message to `target` (header, optional plan, payload);
// `operation`: it is an RMA operation of the current epoch (not a
// synchronization message), which later fences and flushes must cover.
Status send_request(Window& w, int target, MessageBytes bytes, bool operation);
// The header alone (synchronization messages).
Status send_control(Window& w, int target, Kind kind, int32_t lock_type = 0);
// The deferred error, if any, as a Status (and forgotten).
Status take_deferred(Window& w);
// Posts the receive of the next reply from `target` (bytes long); returns its sequence number.
Result<uint64_t> expect_reply(Window& w, int target, PendingReply r, int64_t bytes);
// Read without the one-sided lock by a request's step (rma/ops.cpp), so as
// an atomic (acquire: the reply's bytes were unpacked before the release
// store of progress_window)
inline bool reply_done(const Window& w, int target, uint64_t seq) {
  auto& done = const_cast<uint64_t&>(w.peers[static_cast<size_t>(target)].replies_done);
  return std::atomic_ref<uint64_t>(done).load(std::memory_order_acquire) >= seq;
}

}  // namespace dtmpi::rma
