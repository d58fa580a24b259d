// The buffer-location datatype attribute (runtime/buffer_hint.hpp, issue 29):
// its keyval, created at MPI_Init, the interposed MPI_Type_set_attr that
// records its values, and dtmpi_buffer_keyval() of include/dtmpi/dtmpi.h.
#include <atomic>
#include <cstdint>

#include "dtmpi/dtmpi.h"
#include "interpose/boundary.hpp"
#include "interpose/export.hpp"
#include "runtime/buffer_hint.hpp"
#include "runtime/lifecycle.hpp"
#include "base/system_mpi.hpp"

namespace {

std::atomic<int> g_keyval{MPI_KEYVAL_INVALID};

// MPI calls it when the value goes: MPI_Type_delete_attr, a new value set
// over it, MPI_Type_free (before the handle can be reused).
int forget_hint(MPI_Datatype type, int, void*, void*) {
  dtmpi::runtime::drop_buffer_hint(type);
  return MPI_SUCCESS;
}

}  // namespace

namespace dtmpi::interpose {

// At MPI_Init. Duplicates do not inherit the attribute (MPI_TYPE_NULL_COPY_FN):
// a duplicate is a type of its own, which the application describes itself.
void create_buffer_keyval() {
  int keyval = MPI_KEYVAL_INVALID;
  if (DTMPI_MPI_WARN(REAL(MPI_Type_create_keyval)(MPI_TYPE_NULL_COPY_FN, forget_hint, &keyval, nullptr)))
    g_keyval.store(keyval, std::memory_order_release);
}

}  // namespace dtmpi::interpose

DTMPI_EXPORT int dtmpi_buffer_keyval(void) { return g_keyval.load(std::memory_order_acquire); }

DTMPI_EXPORT int MPI_Type_set_attr(MPI_Datatype type, int keyval, void* value) {
  // a value replaced is dropped first
  const dtmpi::Status s = DTMPI_MPI_FORWARD(REAL(MPI_Type_set_attr)(type, keyval, value));
  if (s && keyval != MPI_KEYVAL_INVALID && keyval == g_keyval.load(std::memory_order_acquire) &&
      dtmpi::runtime::active())
    dtmpi::runtime::set_buffer_hint(type, reinterpret_cast<intptr_t>(value));
  return dtmpi::interpose::result(s);
}
