// The buffer-location datatype attribute (include/dtmpi/dtmpi.h,
// runtime/buffer_hint.hpp) without a GPU: the keyval exists after MPI_Init,
// host buffers sent with a type that says "host" arrive, the value reads back,
// a device that the process does not have is refused, and the value goes with
// MPI_Type_delete_attr, a replacement and MPI_Type_free (the handle reused by
// another type has none). The GPU half is in test_gpu_pointer_kind.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "dtmpi/dtmpi.h"
#include "runtime/buffer_hint.hpp"
#include "runtime/device.hpp"

namespace {

namespace rt = dtmpi::runtime;

TEST(BufferAttr, HostBuffersThroughTheInterposer) {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int keyval = dtmpi_buffer_keyval();
  ASSERT_NE(keyval, MPI_KEYVAL_INVALID);
  MPI_Datatype on_host;
  MPI_Type_dup(MPI_DOUBLE, &on_host);
  ASSERT_EQ(MPI_Type_set_attr(on_host, keyval, DTMPI_BUFFER_HOST), MPI_SUCCESS);
  void* value = nullptr;
  int flag = 0;
  MPI_Type_get_attr(on_host, keyval, &value, &flag);
  EXPECT_TRUE(flag && value == DTMPI_BUFFER_HOST);
  const int peer = (me + 1) % n, from = (me + n - 1) % n;
  std::vector<double> out(500), in(500, -1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(i) + 1000.0 * me;
  MPI_Sendrecv(out.data(), 500, on_host, peer, 0, in.data(), 500, on_host, from, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(in[i], static_cast<double>(i) + 1000.0 * from);
  // replaced, deleted, set again, freed: all accepted by the system MPI
  EXPECT_EQ(MPI_Type_set_attr(on_host, keyval, DTMPI_BUFFER_HOST), MPI_SUCCESS);
  EXPECT_EQ(MPI_Type_delete_attr(on_host, keyval), MPI_SUCCESS);
  MPI_Type_get_attr(on_host, keyval, &value, &flag);
  EXPECT_FALSE(flag);
  EXPECT_EQ(MPI_Type_set_attr(on_host, keyval, DTMPI_BUFFER_HOST), MPI_SUCCESS);
  MPI_Type_free(&on_host);
  // a device on a machine without one: kept by MPI, ignored by dtmpi (warning)
  if (!rt::gpu_enabled()) {
    MPI_Datatype t;
    MPI_Type_dup(MPI_INT, &t);
    EXPECT_EQ(MPI_Type_set_attr(t, keyval, DTMPI_BUFFER_DEVICE(0)), MPI_SUCCESS);
    std::vector<int> a(10, me), b(10, -1);
    MPI_Sendrecv(a.data(), 10, t, peer, 1, b.data(), 10, t, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int v : b) ASSERT_EQ(v, from);
    MPI_Type_free(&t);
  }
}

// The table itself (this binary's copy of the runtime).
TEST(BufferAttr, HintTable) {
  MPI_Datatype t;
  MPI_Type_dup(MPI_INT, &t);
  static char some_host_bytes[16];
  EXPECT_EQ(rt::buffer_info(some_host_bytes, t).kind, rt::MemKind::kHost);
  EXPECT_TRUE(rt::set_buffer_hint(t, rt::kBufferHost));
  EXPECT_EQ(rt::buffer_info(some_host_bytes, t).kind, rt::MemKind::kHost);
  EXPECT_EQ(rt::set_buffer_hint(t, 0), rt::gpu_enabled());  // device 0: only where there is one
  EXPECT_FALSE(rt::set_buffer_hint(t, -7));
  EXPECT_FALSE(rt::set_buffer_hint(t, 1 << 20));
  // a refused value removes the earlier one: the buffer is classified again
  EXPECT_EQ(rt::buffer_info(some_host_bytes, t).kind, rt::MemKind::kHost);
  rt::drop_buffer_hint(t);
  rt::drop_buffer_hint(t);  // twice: harmless
  MPI_Type_free(&t);
}

}  // namespace
