// MPI_Win_* object calls: creation (the decision whether dtmpi serves a
// window: rma::serve_*), freeing, dynamic memory, attributes, names, error
// handlers, info, groups. Calls on the system MPI's windows pass through.
#include <cstring>

#include "base/system_mpi.hpp"
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "rma/standin.hpp"
#include "rma/window.hpp"
#include "runtime/lifecycle.hpp"

namespace rma = dtmpi::rma;
using dtmpi::interpose::result;

namespace {
// A window dtmpi made (`made`, then *win): keeps the creation's info hints.
dtmpi::Status with_hints(dtmpi::Status made, const MPI_Win* win, MPI_Info info) {
  if (!made) return made;
  rma::Window* w = rma::find(*win);
  return w ? rma::note_hints(*w, info) : made;
}
}  // namespace

DTMPI_EXPORT int MPI_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                MPI_Win* win) {
  if (!dtmpi::runtime::active()) return REAL(MPI_Win_create)(base, size, disp_unit, info, comm, win);
  auto serve = rma::serve_create(base, size, comm);
  if (!serve) return result(comm, serve.error());
  if (!serve.value()) return REAL(MPI_Win_create)(base, size, disp_unit, info, comm, win);
  return result(comm, with_hints(rma::create(base, size, disp_unit, comm, rma::Flavor::kCreate, win), win, info));
}

DTMPI_EXPORT int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                                  MPI_Win* win) {
  // MPI allocates a window's memory on the host: the system MPI's window,
  // unless it cannot make one here or every window is dtmpi's (DTMPI_RMA=all)
  if (!dtmpi::runtime::active()) return REAL(MPI_Win_allocate)(size, disp_unit, info, comm, baseptr, win);
  auto serve = rma::serve_allocate(comm);
  if (!serve) return result(comm, serve.error());
  if (!serve.value()) return REAL(MPI_Win_allocate)(size, disp_unit, info, comm, baseptr, win);
  return result(comm, with_hints(rma::allocate(size, disp_unit, comm, baseptr, win), win, info));
}

DTMPI_EXPORT int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  if (!dtmpi::runtime::active()) return REAL(MPI_Win_create_dynamic)(info, comm, win);
  auto serve = rma::serve_dynamic(comm);
  if (!serve) return result(comm, serve.error());
  if (!serve.value()) return REAL(MPI_Win_create_dynamic)(info, comm, win);
  return result(comm, with_hints(rma::create(nullptr, 0, 1, comm, rma::Flavor::kDynamic, win), win, info));
}

DTMPI_EXPORT int MPI_Win_attach(MPI_Win win, void* base, MPI_Aint size) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::attach(*w, base, size));
  return REAL(MPI_Win_attach)(win, base, size);
}

DTMPI_EXPORT int MPI_Win_detach(MPI_Win win, const void* base) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::detach(*w, base));
  return REAL(MPI_Win_detach)(win, base);
}

DTMPI_EXPORT int MPI_Win_free(MPI_Win* win) {
  if (rma::Window* w = win ? rma::find(*win) : nullptr) {
    dtmpi::Status s = rma::free_window(win);
    return s ? MPI_SUCCESS : result(*w, s);
  }
  // the system MPI's window: its epochs are closed, stand-ins all written back
  if (win) {
    if (dtmpi::Status s = rma::stand_ins_completed(*win, rma::kAllTargets); !s)
      return dtmpi::interpose::win_result(*win, s);
  }
  return REAL(MPI_Win_free)(win);
}

DTMPI_EXPORT int MPI_Win_get_attr(MPI_Win win, int keyval, void* value, int* flag) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::get_attr(*w, keyval, value, flag));
  return REAL(MPI_Win_get_attr)(win, keyval, value, flag);
}

DTMPI_EXPORT int MPI_Win_set_attr(MPI_Win win, int keyval, void* value) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::set_attr(*w, keyval, value));
  return REAL(MPI_Win_set_attr)(win, keyval, value);
}

DTMPI_EXPORT int MPI_Win_delete_attr(MPI_Win win, int keyval) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::delete_attr(*w, keyval));
  return REAL(MPI_Win_delete_attr)(win, keyval);
}

DTMPI_EXPORT int MPI_Win_create_keyval(MPI_Win_copy_attr_function* copy, MPI_Win_delete_attr_function* del,
                                       int* keyval, void* extra) {
  const int rc = REAL(MPI_Win_create_keyval)(copy, del, keyval, extra);
  // dtmpi's windows call the delete callback themselves (attributes kept by dtmpi)
  if (rc == MPI_SUCCESS) rma::note_keyval(*keyval, del, extra);
  return rc;
}

DTMPI_EXPORT int MPI_Win_free_keyval(int* keyval) {
  if (keyval) rma::forget_keyval(*keyval);
  return REAL(MPI_Win_free_keyval)(keyval);
}

DTMPI_EXPORT int MPI_Win_get_group(MPI_Win win, MPI_Group* group) {
  if (rma::Window* w = rma::find(win))
    return result(*w, DTMPI_MPI_STATUS(REAL(MPI_Comm_group)(w->comm, group)));
  return REAL(MPI_Win_get_group)(win, group);
}

DTMPI_EXPORT int MPI_Win_set_name(MPI_Win win, const char* name) {
  if (rma::Window* w = rma::find(win)) {
    w->name.assign(name ? name : "", 0, MPI_MAX_OBJECT_NAME - 1);
    return MPI_SUCCESS;
  }
  return REAL(MPI_Win_set_name)(win, name);
}

DTMPI_EXPORT int MPI_Win_get_name(MPI_Win win, char* name, int* len) {
  if (rma::Window* w = rma::find(win)) {
    std::memcpy(name, w->name.c_str(), w->name.size() + 1);
    *len = static_cast<int>(w->name.size());
    return MPI_SUCCESS;
  }
  return REAL(MPI_Win_get_name)(win, name, len);
}

DTMPI_EXPORT int MPI_Win_create_errhandler(MPI_Win_errhandler_function* fn, MPI_Errhandler* errhandler) {
  const int rc = REAL(MPI_Win_create_errhandler)(fn, errhandler);
  if (rc == MPI_SUCCESS) rma::note_errhandler(*errhandler, fn);
  return rc;
}

DTMPI_EXPORT int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::set_errhandler(*w, errhandler));
  return REAL(MPI_Win_set_errhandler)(win, errhandler);
}

DTMPI_EXPORT int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler* errhandler) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::get_errhandler(*w, errhandler));
  return REAL(MPI_Win_get_errhandler)(win, errhandler);
}

DTMPI_EXPORT int MPI_Win_call_errhandler(MPI_Win win, int code) {
  if (rma::Window* w = rma::find(win)) {
    rma::raise(*w, code);
    return MPI_SUCCESS;
  }
  return REAL(MPI_Win_call_errhandler)(win, code);
}

DTMPI_EXPORT int MPI_Win_set_info(MPI_Win win, MPI_Info info) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::note_hints(*w, info));  // kept, none changes how dtmpi serves
  return REAL(MPI_Win_set_info)(win, info);
}

DTMPI_EXPORT int MPI_Win_get_info(MPI_Win win, MPI_Info* info) {
  if (rma::Window* w = rma::find(win)) return result(*w, rma::get_info(*w, info));
  return REAL(MPI_Win_get_info)(win, info);
}

DTMPI_EXPORT int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
  if (rma::Window* w = rma::find(win))
    return result(*w, dtmpi::Error{MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query on a window that is not shared memory"});
  return REAL(MPI_Win_shared_query)(win, rank, size, disp_unit, baseptr);
}

#ifdef OPEN_MPI
// Fortran handles of windows (Open MPI: functions; MPICH's MPI_Win_c2f/f2c
// are casts, which dtmpi's int handles survive). A Fortran program holds
// an INTEGER per window, and Open MPI's would index its own handle table:
// dtmpi's windows get numbers of their own, negative (Window::fortran),
// which Open MPI never hands out, so both kinds of window convert both ways
// (the Fortran entry points call these; so may C code mixing with Fortran).
DTMPI_EXPORT MPI_Fint MPI_Win_c2f(MPI_Win win) {
  if (rma::Window* w = rma::find(win)) return w->fortran;
  return REAL(MPI_Win_c2f)(win);
}

DTMPI_EXPORT MPI_Win MPI_Win_f2c(MPI_Fint win) {
  if (rma::Window* w = rma::find_fortran(win)) return w->handle;
  return REAL(MPI_Win_f2c)(win);
}
#endif
