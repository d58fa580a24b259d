// The window registry, creation and freeing, attributes, names and error
// handlers of the windows dtmpi serves (rma/window.hpp).
#include "rma/window.hpp"

#include <atomic>
#include <cstring>
#include <thread>
#include <type_traits>

#include "base/log.hpp"
#include "base/system_mpi.hpp"
#include "rma/direct.hpp"
#include "rma/progress_op.hpp"
#include "rma/sync.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/stats.hpp"
#include "transport/peers.hpp"

namespace dtmpi::rma {

std::atomic<int> g_windows{0};

std::vector<Window*>& window_list() {
  static std::vector<Window*>* list = new std::vector<Window*>;
  return *list;
}

std::recursive_mutex& rma_mutex() {
  static std::recursive_mutex m;
  return m;
}

namespace {
thread_local int t_holds = 0;         // this thread's RmaLocks alive
std::atomic<int> g_waiting{0};        // threads blocked taking the lock
}  // namespace

RmaLock::RmaLock() {
  g_waiting.fetch_add(1, std::memory_order_relaxed);
  rma_mutex().lock();
  g_waiting.fetch_sub(1, std::memory_order_relaxed);
  ++t_holds;
}
RmaLock::~RmaLock() {
  --t_holds;
  rma_mutex().unlock();
}

void let_others_in() {
  const int holds = t_holds;
  // nobody waiting (a single-threaded program): keep the lock, no cost
  if (holds == 0 || g_waiting.load(std::memory_order_relaxed) == 0) return;
  for (int i = 0; i < holds; ++i) rma_mutex().unlock();
  // One yield, no hand-off: waiting until a waiter has taken the lock (tried
  // after the review) made every poll a context switch where threads
  // outnumber cores, and rma_thread_sync_np3 ran out of its minute under
  // MPICH with the sanitizers. A waiter that loses the race here gets the
  // lock at a later poll or when this synchronization ends.
  std::this_thread::yield();
  // waiting for it again: counted, so that the thread holding it now lets
  // this one back in from its own waits
  g_waiting.fetch_add(1, std::memory_order_relaxed);
  for (int i = 0; i < holds; ++i) rma_mutex().lock();
  g_waiting.fetch_sub(1, std::memory_order_relaxed);
}

namespace {

// Handles of dtmpi's windows: Open MPI's MPI_Win is a pointer, so the
// Window's own address (never an ompi_win_t's); MPICH's is an int, so a
// value whose top two bits are 00 -- MPICH's HANDLE_KIND_INVALID, which no
// MPICH object ever has (its MPI_WIN_NULL is 0x20000000).
constexpr uint32_t kIntHandleBase = 0x0D000000u;

// A template, so that the branch for the other MPI's handle type is discarded.
template <class Handle>
Handle make_handle(Window* w, uint32_t id) {
  if constexpr (std::is_pointer_v<Handle>) return reinterpret_cast<Handle>(w);
  else return static_cast<Handle>(kIntHandleBase | (id & 0x00FFFFFFu));
}
uintptr_t key_of(MPI_Win win) { return handle_bits(win); }

struct ErrhandlerCallback {
  MPI_Win_errhandler_function* fn = nullptr;
  ForeignErrhandlerCall foreign = nullptr;
  void* foreign_fn = nullptr;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<uintptr_t, std::unique_ptr<Window>> windows;
  std::unordered_map<MPI_Fint, Window*> by_fortran;
  uint32_t next_id = 1;
  std::map<int, KeyvalCallbacks> keyvals;
  std::map<uintptr_t, ErrhandlerCallback> errhandlers;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: windows may outlive static destruction
  return *r;
}

MPI_Win register_window(std::unique_ptr<Window> w) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const uint32_t id = r.next_id++;
  const MPI_Win h = make_handle<MPI_Win>(w.get(), id);
  w->handle = h;
  w->fortran = kFortranBase - static_cast<MPI_Fint>(id & 0x00FFFFFFu);
  r.by_fortran[w->fortran] = w.get();
  window_list().push_back(w.get());
  r.windows[key_of(h)] = std::move(w);
  if (g_windows.fetch_add(1, std::memory_order_relaxed) == 0) {
    start_progress_op();
    start_progress_thread();
  }
  windows_changed();
  runtime::count(runtime::Counter::kRmaWindows);
  return h;
}

bool system_mpi_takes_device() { return transport::mpi_takes_device_memory(); }

// MAX over `comm` of a local yes/no: every rank must decide alike.
Result<bool> any_rank(bool mine, MPI_Comm comm) {
  int in = mine ? 1 : 0, out = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Allreduce)(&in, &out, 1, MPI_INT, MPI_MAX, comm));
  return out != 0;
}

Status setup(Window& w, MPI_Comm comm) {
  // a split, not a dup: MPI_Comm_dup copies the application's attributes
  // (mpi4py's cached objects), whose delete callbacks would then run on
  // dtmpi's private communicator at MPI_Win_free and free them twice
  int rank = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_rank)(comm, &rank));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split)(comm, 0, rank, &w.comm));
  // dtmpi's own traffic reports its errors to dtmpi, which raises them on the window
  DTMPI_MPI_CHECK(REAL(MPI_Comm_set_errhandler)(w.comm, MPI_ERRORS_RETURN));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_rank)(w.comm, &w.rank));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_size)(w.comm, &w.size));
  int64_t mine[2] = {static_cast<int64_t>(w.bytes), w.disp_unit};
  std::vector<int64_t> all(2 * static_cast<size_t>(w.size));
  DTMPI_MPI_CHECK(REAL(MPI_Allgather)(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, w.comm));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_split)(MPI_COMM_SELF, 0, 0, &w.errhandler_holder));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_set_errhandler)(w.errhandler_holder, MPI_ERRORS_ARE_FATAL));
  w.peers.resize(static_cast<size_t>(w.size));
  for (int i = 0; i < w.size; ++i) {
    w.peers[static_cast<size_t>(i)].size = all[2 * static_cast<size_t>(i)];
    w.peers[static_cast<size_t>(i)].disp_unit = static_cast<int>(all[2 * static_cast<size_t>(i) + 1]);
  }
  return ok_status();
}

}  // namespace

Window* find(MPI_Win win) {
  if (g_windows.load(std::memory_order_relaxed) == 0) return nullptr;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.windows.find(key_of(win));
  return it == r.windows.end() ? nullptr : it->second.get();
}

Window* find_fortran(MPI_Fint f) {
  if (f > kFortranBase || g_windows.load(std::memory_order_relaxed) == 0) return nullptr;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_fortran.find(f);
  return it == r.by_fortran.end() ? nullptr : it->second;
}

namespace {

// Whether the system MPI can create a window at all here (asked once, on
// MPI_COMM_SELF, its errors returned): Open MPI 4.1's default one-sided
// components fail MPI_Win_create on the GPU machines, and its osc/pt2pt
// refuses MPI_THREAD_MULTIPLE (mpi4py's default), so such a job has no
// one-sided communication unless dtmpi serves its windows.
bool system_rma_usable() {
  static const bool usable = [] {
    MPI_Errhandler old = MPI_ERRHANDLER_NULL;
    if (REAL(MPI_Comm_get_errhandler)(MPI_COMM_SELF, &old) != MPI_SUCCESS) return true;
    REAL(MPI_Comm_set_errhandler)(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    static int64_t probe[1];
    MPI_Win w = MPI_WIN_NULL;
    const bool ok = REAL(MPI_Win_create)(probe, sizeof probe, 1, MPI_INFO_NULL, MPI_COMM_SELF, &w) == MPI_SUCCESS;
    if (ok) REAL(MPI_Win_free)(&w);
    REAL(MPI_Comm_set_errhandler)(MPI_COMM_SELF, old);
    REAL(MPI_Errhandler_free)(&old);
    if (!ok)
      DTMPI_LOG(kInfo, "the system MPI cannot create one-sided windows here: dtmpi serves every window");
    return ok;
  }();
  return usable;
}

// DTMPI_RMA=auto: dtmpi serves a window when some rank's memory is GPU memory
// the system MPI cannot take (`device`), or when the system MPI's one-sided
// communication is unusable on some rank; asked of every rank.
Result<bool> serve_auto(bool device, MPI_Comm comm) {
  const bool mine = (device && !system_mpi_takes_device()) || !system_rma_usable();
  return any_rank(mine, comm);
}

}  // namespace

Result<bool> serve_create(const void* base, MPI_Aint size, MPI_Comm comm) {
  const std::string& mode = runtime::config().rma;
  if (mode == "off") return false;
  if (mode == "all") return true;
  return serve_auto(size > 0 && runtime::on_gpu(runtime::pointer_info(base)), comm);
}

Result<bool> serve_allocate(MPI_Comm comm) {
  const std::string& mode = runtime::config().rma;
  if (mode == "off") return false;
  if (mode == "all") return true;
  return serve_auto(false, comm);  // MPI allocates host memory
}

Result<bool> serve_dynamic(MPI_Comm comm) {
  const std::string& mode = runtime::config().rma;
  if (mode == "off") return false;
  if (mode == "all") return true;
  // device memory may be attached later
  return serve_auto(runtime::pointer_kind_detail::g_classify.load() != 0 && runtime::gpu_enabled(), comm);
}

Status create(void* base, MPI_Aint size, int disp_unit, MPI_Comm comm, Flavor flavor, MPI_Win* win) {
  if (size < 0 || disp_unit <= 0) return Error{MPI_ERR_ARG, "MPI_Win_create: negative size or disp_unit < 1"};
  // Not under the one-sided lock until the window is registered: the setup
  // is collective (a split, allgathers) and waits for every rank to arrive,
  // while the window is this thread's alone. Held through it, the lock kept
  // the progress thread (and every other thread's one-sided calls) from the
  // windows that exist -- a peer taking values from one of them before
  // joining this creation waited for ever (rma_passive_progress).
  auto w = std::make_unique<Window>();
  w->flavor = flavor;
  w->flavor_attr = static_cast<int>(flavor);
  w->base = flavor == Flavor::kDynamic ? MPI_BOTTOM : base;
  w->bytes = flavor == Flavor::kDynamic ? 0 : size;
  w->disp_unit = flavor == Flavor::kDynamic ? 1 : disp_unit;
  w->info = runtime::pointer_info(base);
  Status s = setup(*w, comm);
  if (s) s = share_regions(*w);
  if (s) w->world_members = world_members_of(w->comm);
  if (!s) {
    if (w->comm != MPI_COMM_NULL) REAL(MPI_Comm_free)(&w->comm);
    if (w->errhandler_holder != MPI_COMM_NULL) REAL(MPI_Comm_free)(&w->errhandler_holder);
    return s;
  }
  DTMPI_LOG(kDebug, "MPI_Win_create: dtmpi serves a window of %lld bytes (%s memory) over %d ranks",
            static_cast<long long>(size), runtime::kind_name(w->info.kind), w->size);
  RmaLock lock;  // progress() walks the window list under it
  *win = register_window(std::move(w));
  return ok_status();
}

Status allocate(MPI_Aint size, int disp_unit, MPI_Comm comm, void* baseptr, MPI_Win* win) {
  if (size < 0) return Error{MPI_ERR_SIZE, "MPI_Win_allocate: negative size"};
  void* mem = nullptr;
  DTMPI_MPI_CHECK(REAL(MPI_Alloc_mem)(size, MPI_INFO_NULL, &mem));
  Status s = create(mem, size, disp_unit, comm, Flavor::kAllocate, win);
  if (!s) {
    REAL(MPI_Free_mem)(mem);
    return s;
  }
  find(*win)->free_base = true;
  std::memcpy(baseptr, &mem, sizeof mem);
  return ok_status();
}

Status attach(Window& w, void* base, MPI_Aint size) {
  if (w.flavor != Flavor::kDynamic) return Error{MPI_ERR_RMA_FLAVOR, "MPI_Win_attach on a window that is not dynamic"};
  if (size < 0) return Error{MPI_ERR_SIZE, "MPI_Win_attach: negative size"};
  RmaLock lock;
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  for (const Region& r : w.regions)
    if (b < r.base + static_cast<uintptr_t>(r.bytes) && r.base < b + static_cast<uintptr_t>(size))
      return Error{MPI_ERR_RMA_ATTACH, "MPI_Win_attach: the memory overlaps memory attached before"};
  w.regions.push_back(Region{b, size, runtime::pointer_info(base)});
  return ok_status();
}

Status detach(Window& w, const void* base) {
  RmaLock lock;
  for (size_t i = 0; i < w.regions.size(); ++i)
    if (w.regions[i].base == reinterpret_cast<uintptr_t>(base)) {
      w.regions.erase(w.regions.begin() + static_cast<std::ptrdiff_t>(i));
      return ok_status();
    }
  return Error{MPI_ERR_RMA_ATTACH, "MPI_Win_detach: no memory attached at that address"};
}

Status free_window(MPI_Win* win) {
  Window* w = find(*win);
  if (!w) return Error{MPI_ERR_WIN, "MPI_Win_free: not a window of dtmpi's"};
  {
    RmaLock lock;
    // MPI_Win_free synchronizes like a fence would: nobody frees memory a peer
    // is still reading or writing (every rank's requests to it are handled)
    for (int t = 0; t < w->size; ++t)
      if (w->peers[static_cast<size_t>(t)].lock_type != 0)
        return Error{MPI_ERR_RMA_SYNC, "MPI_Win_free with a lock still held"};
    DTMPI_TRY(fence_sync(*w));
  }
  // the attributes' delete callbacks are the program's code (they may wait
  // for its other threads, which may need the lock): run without it; the
  // window is the freeing thread's now (another thread's call on it would be
  // erroneous), the progress of its peers' last requests goes on meanwhile
  for (auto it = w->attributes.begin(); it != w->attributes.end();) {
    const int keyval = it->first;
    ++it;
    DTMPI_TRY(delete_attr(*w, keyval));
  }
  RmaLock lock;
  wait_until([&] { return w->outgoing.empty(); });
  REAL(MPI_Comm_free)(&w->comm);
  REAL(MPI_Comm_free)(&w->errhandler_holder);
  if (w->free_base) REAL(MPI_Free_mem)(w->base);
  Registry& r = registry();
  {
    std::lock_guard rl(r.mu);
    auto& list = window_list();
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] == w) list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    r.by_fortran.erase(w->fortran);
    r.windows.erase(key_of(*win));
  }
  windows_changed();
  if (g_windows.fetch_sub(1, std::memory_order_relaxed) == 1) stop_progress_thread();
  *win = MPI_WIN_NULL;
  return ok_status();
}

Status get_attr(Window& w, int keyval, void* value, int* flag) {
  if (keyval == MPI_KEYVAL_INVALID) return Error{MPI_ERR_KEYVAL, "MPI_Win_get_attr of MPI_KEYVAL_INVALID"};
  void* out = nullptr;
  *flag = 1;
  if (keyval == MPI_WIN_BASE) out = w.base;
  else if (keyval == MPI_WIN_SIZE) out = &w.bytes;
  else if (keyval == MPI_WIN_DISP_UNIT) out = &w.disp_unit;
  else if (keyval == MPI_WIN_CREATE_FLAVOR) out = &w.flavor_attr;
  else if (keyval == MPI_WIN_MODEL) out = &w.model_attr;
  else {
    auto it = w.attributes.find(keyval);
    if (it == w.attributes.end()) {
      *flag = 0;
      return ok_status();
    }
    out = it->second.value;
  }
  std::memcpy(value, &out, sizeof out);
  return ok_status();
}

Status set_attr(Window& w, int keyval, void* value) {
  if (keyval == MPI_KEYVAL_INVALID) return Error{MPI_ERR_KEYVAL, "MPI_Win_set_attr of MPI_KEYVAL_INVALID"};
  if (keyval == MPI_WIN_BASE || keyval == MPI_WIN_SIZE || keyval == MPI_WIN_DISP_UNIT ||
      keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL)
    return Error{MPI_ERR_KEYVAL, "MPI_Win_set_attr of a predefined attribute"};
  if (w.attributes.count(keyval)) DTMPI_TRY(delete_attr(w, keyval));
  // the keyval's callbacks as they are now: the attribute keeps them after
  // MPI_Win_free_keyval (MPI-3.1 sec. 6.7.2: the keyval is only marked freed
  // while attributes use it; MPICH's test rma/fkeyvalwin)
  Attribute a;
  a.value = value;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto k = r.keyvals.find(keyval);
    if (k != r.keyvals.end()) a.callbacks = k->second;
  }
  w.attributes[keyval] = a;
  return ok_status();
}

Status delete_attr(Window& w, int keyval) {
  if (keyval == MPI_KEYVAL_INVALID) return Error{MPI_ERR_KEYVAL, "MPI_Win_delete_attr of MPI_KEYVAL_INVALID"};
  auto it = w.attributes.find(keyval);
  if (it == w.attributes.end()) return Error{MPI_ERR_KEYVAL, "MPI_Win_delete_attr: the window has no such attribute"};
  const Attribute a = it->second;
  w.attributes.erase(it);
  const KeyvalCallbacks& cb = a.callbacks;
  int rc = MPI_SUCCESS;
  if (cb.foreign) rc = cb.foreign(cb.foreign_fn, w.handle, keyval, a.value, cb.extra);
  else if (cb.del && cb.del != MPI_WIN_NULL_DELETE_FN) rc = cb.del(w.handle, keyval, a.value, cb.extra);
  if (rc != MPI_SUCCESS) return Error{rc, "a window attribute's delete callback failed", false};
  return ok_status();
}

void note_keyval(int keyval, MPI_Win_delete_attr_function* del, void* extra) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.keyvals[keyval] = KeyvalCallbacks{del, extra, nullptr, nullptr};
}

void note_foreign_keyval(int keyval, ForeignDeleteCall call, void* fn, void* extra) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.keyvals[keyval] = KeyvalCallbacks{nullptr, extra, call, fn};
}

void forget_keyval(int keyval) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.keyvals.erase(keyval);
}

void note_errhandler(MPI_Errhandler e, MPI_Win_errhandler_function* fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.errhandlers[handle_bits(e)] = ErrhandlerCallback{fn, nullptr, nullptr};
}

void note_foreign_errhandler(MPI_Errhandler e, ForeignErrhandlerCall call, void* fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.errhandlers[handle_bits(e)] = ErrhandlerCallback{nullptr, call, fn};
}

namespace {
bool predefined(MPI_Errhandler e) { return e == MPI_ERRORS_RETURN || e == MPI_ERRORS_ARE_FATAL; }
}  // namespace

Status note_hints(Window& w, MPI_Info info) {
  if (info == MPI_INFO_NULL) return ok_status();
  int n = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Info_get_nkeys)(info, &n));
  for (int i = 0; i < n; ++i) {
    char key[MPI_MAX_INFO_KEY + 1] = {};
    DTMPI_MPI_CHECK(REAL(MPI_Info_get_nthkey)(info, i, key));
    int len = 0, flag = 0;
    DTMPI_MPI_CHECK(REAL(MPI_Info_get_valuelen)(info, key, &len, &flag));
    if (!flag) continue;
    std::string value(static_cast<size_t>(len) + 1, '\0');
    DTMPI_MPI_CHECK(REAL(MPI_Info_get)(info, key, len + 1, value.data(), &flag));
    value.resize(static_cast<size_t>(len));
    w.hints[key] = value;
  }
  return ok_status();
}

Status get_info(const Window& w, MPI_Info* info) {
  // dtmpi orders every accumulate and serves every op whatever the hints say:
  // the defaults are what it does (MPI-3.1 sec. 11.2.1)
  static const std::pair<const char*, const char*> kDefaults[] = {{"no_locks", "false"},
                                                                   {"accumulate_ordering", "rar,raw,war,waw"},
                                                                   {"accumulate_ops", "same_op_no_op"},
                                                                   {"same_size", "false"},
                                                                   {"same_disp_unit", "false"}};
  DTMPI_MPI_CHECK(REAL(MPI_Info_create)(info));
  for (const auto& [key, value] : kDefaults)
    if (!w.hints.count(key)) DTMPI_MPI_CHECK(REAL(MPI_Info_set)(*info, key, value));
  for (const auto& [key, value] : w.hints) DTMPI_MPI_CHECK(REAL(MPI_Info_set)(*info, key.c_str(), value.c_str()));
  return ok_status();
}

Status set_errhandler(Window& w, MPI_Errhandler e) {
  if (predefined(e)) DTMPI_MPI_CHECK(REAL(MPI_Comm_set_errhandler)(w.errhandler_holder, e));
  w.errhandler = e;
  return ok_status();
}

Status get_errhandler(Window& w, MPI_Errhandler* e) {
  if (predefined(w.errhandler)) {
    DTMPI_MPI_CHECK(REAL(MPI_Comm_get_errhandler)(w.errhandler_holder, e));  // a counted reference
    return ok_status();
  }
  // a handler of the application's (MPI_Win_create_errhandler): its own handle
  *e = w.errhandler;
  return ok_status();
}

int raise(Window& w, int code) {
  if (code == MPI_SUCCESS || w.errhandler == MPI_ERRORS_RETURN) return code;
  ErrhandlerCallback cb;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.errhandlers.find(handle_bits(w.errhandler));
    if (it != r.errhandlers.end()) cb = it->second;
  }
  if (cb.fn || cb.foreign) {
    MPI_Win h = w.handle;
    int c = code;
    if (cb.foreign) cb.foreign(cb.foreign_fn, &h, &c);
    else cb.fn(&h, &c);
    return code;
  }
  // MPI_ERRORS_ARE_FATAL (the default of windows), MPI_ERRORS_ABORT, or a
  // handler dtmpi did not see created
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (REAL(MPI_Error_string)(code, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "code %d", code);
  DTMPI_LOG(kError, "error on a one-sided window (%s): aborting, as its error handler says", text);
  REAL(MPI_Abort)(MPI_COMM_WORLD, code);
  return code;
}

}  // namespace dtmpi::rma
