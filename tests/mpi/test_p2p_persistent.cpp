// Persistent point-to-point requests (MPI_Send_init and its modes,
// MPI_Recv_init, MPI_Start/MPI_Startall) through dtmpi. Run with
// DTMPI_TEST_STAGE_HOST=1, host buffers of derived types take the paths GPU
// buffers take (single-message staging; with DTMPI_METHOD=pipelined or device,
// the multi-message protocol for messages of 64 KiB and more), so these tests
// cover what a non-CUDA-aware system MPI could not do with device pointers;
// without it, host buffers go to the system MPI or dtmpi's host staging.
// Data is checked against the system MPI's own pack/unpack; statuses, every
// Wait/Test form with active, inactive and foreign handles, free, cancel,
// wildcards, modes, a datatype freed after the init.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/mpi_world.hpp"
#include "common/random_types.hpp"

namespace {

using dtmpi::testing::stat_value;
using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

bool stage_host() {
  const char* v = std::getenv("DTMPI_TEST_STAGE_HOST");
  return v && std::strcmp(v, "1") == 0;
}
uint64_t starts() { return stat_value("persistent starts "); }

bool overlaps(MPI_Datatype t, int count) {
  auto offs = dtmpi::testing::typemap_offsets(t, count);
  std::sort(offs.begin(), offs.end());
  return std::adjacent_find(offs.begin(), offs.end()) != offs.end();
}

// A committed random type without overlapping bytes, `count` elements of it
// (at least `min_bytes`), and buffers over its span.
struct Layout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 1, size = 0;
  dtmpi::testing::Span span{};
  size_t extent() const { return static_cast<size_t>(span.hi - span.lo) + 1; }
  unsigned char* base(std::vector<unsigned char>& b) const { return b.data() - span.lo; }
  // the buffer rank `who` sends in round `round`
  std::vector<unsigned char> data(int who, int round) const {
    std::vector<unsigned char> b(extent());
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(who * 37 + round * 101 + i * 11 + (i >> 9));
    return b;
  }
  // what a receive into `fill`-filled memory holds after `who`'s round `round`
  std::vector<unsigned char> expected(int who, int round, unsigned char fill) {
    auto src = data(who, round);
    std::vector<unsigned char> packed(static_cast<size_t>(size) * count);
    int pos = 0;
    PMPI_Pack(base(src), count, type, packed.data(), static_cast<int>(packed.size()), &pos, MPI_COMM_SELF);
    std::vector<unsigned char> out(extent(), fill);
    pos = 0;
    PMPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos, base(out), count, type, MPI_COMM_SELF);
    return out;
  }
  ~Layout() {
    if (type != MPI_DATATYPE_NULL) dtmpi::testing::free_type(type);
  }
};

// Same sequence on every rank (same seed).
void make_layout(dtmpi::testing::RandomTypes& gen, int64_t min_bytes, Layout& l) {
  for (;;) {
    MPI_Datatype t = gen.make(3);
    MPI_Type_commit(&t);
    int size = 0;
    MPI_Type_size(t, &size);
    if (size > 0 && !overlaps(t, 2)) {
      const int count = std::max<int>(gen.uniform(1, 3), static_cast<int>((min_bytes + size - 1) / size));
      auto span = dtmpi::testing::span_of(t, count);
      if (count < 100000 && span.hi - span.lo < (int64_t{8} << 20)) {
        l.type = t;
        l.size = size;
        l.count = count;
        l.span = span;
        return;
      }
    }
    dtmpi::testing::free_type(t);
  }
}

// New contents in the same storage (a persistent request keeps the address;
// assigning a temporary vector would move its storage in).
void refill(std::vector<unsigned char>& buf, const std::vector<unsigned char>& from) {
  std::copy(from.begin(), from.end(), buf.begin());
}

// A plain contiguous layout for messages that must not depend on random types.
struct Ints {
  std::vector<int> v;
  explicit Ints(int n, int seed) : v(static_cast<size_t>(n)) {
    for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = seed * 1000003 + i;
  }
};

}  // namespace

// The ring: every rank sends to its right and receives from its left with the
// same persistent requests, round after round (small and >= 64 KiB messages).
TEST(Persistent, RingRepeatsWithRandomTypes) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  dtmpi::testing::RandomTypes gen(77);
  const uint64_t before = starts();
  int served = 0;
  for (int iter = 0; iter < 24; ++iter) {
    Layout l;
    make_layout(gen, iter % 2 ? 70000 : 0, l);
    std::vector<unsigned char> out = l.data(me, 0), in(l.extent(), 0xEE);
    MPI_Request r[2];
    ASSERT_EQ(MPI_Recv_init(l.base(in), l.count, l.type, left, iter, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
    ASSERT_EQ(MPI_Send_init(l.base(out), l.count, l.type, right, iter, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
    for (int round = 0; round < 3; ++round) {
      refill(out, l.data(me, round));  // same storage: the request keeps the address
      std::fill(in.begin(), in.end(), 0xEE);
      ASSERT_EQ(MPI_Startall(2, r), MPI_SUCCESS);
      MPI_Status st[2];
      ASSERT_EQ(MPI_Waitall(2, r, st), MPI_SUCCESS);
      ASSERT_NE(r[0], MPI_REQUEST_NULL);  // persistent handles stay
      ASSERT_NE(r[1], MPI_REQUEST_NULL);
      ASSERT_EQ(in, l.expected(left, round, 0xEE)) << "iter " << iter << " round " << round << ": " << gen.recipe();
      int cnt = -1;
      MPI_Get_count(&st[0], l.type, &cnt);
      EXPECT_EQ(cnt, l.count);
      EXPECT_EQ(st[0].MPI_SOURCE, left);
      EXPECT_EQ(st[0].MPI_TAG, iter);
      served += 2;
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    EXPECT_EQ(r[0], MPI_REQUEST_NULL);
  }
  // in the host test mode every planned derived type is dtmpi's; the random
  // types here are all planned, so all starts were served
  if (stage_host()) {
    EXPECT_EQ(starts() - before, static_cast<uint64_t>(served));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Active dtmpi handles, inactive ones and the system MPI's own requests in
// one array, through Waitany, Testsome, Testany, Waitsome, Testall and Wait.
TEST(Persistent, EveryWaitAndTestForm) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  dtmpi::testing::RandomTypes gen(5);
  Layout l;
  make_layout(gen, 70000, l);
  std::vector<unsigned char> out = l.data(me, 0), in(l.extent(), 0);
  Ints iout(64, me), iin(64, -1);
  MPI_Request r[5];
  MPI_Recv_init(l.base(in), l.count, l.type, left, 1, MPI_COMM_WORLD, &r[0]);
  MPI_Send_init(l.base(out), l.count, l.type, right, 1, MPI_COMM_WORLD, &r[1]);
  MPI_Recv_init(iin.v.data(), 64, MPI_INT, left, 2, MPI_COMM_WORLD, &r[2]);  // the system MPI's (or dtmpi's)
  MPI_Send_init(iout.v.data(), 64, MPI_INT, right, 2, MPI_COMM_WORLD, &r[3]);
  std::vector<unsigned char> idle_buf(l.extent());
  MPI_Request idle;  // never started: inactive
  MPI_Send_init(l.base(idle_buf), l.count, l.type, right, 3, MPI_COMM_WORLD, &idle);
  for (int form = 0; form < 6; ++form) {
    refill(out, l.data(me, form));
    std::fill(in.begin(), in.end(), 0);
    ASSERT_EQ(MPI_Startall(4, r), MPI_SUCCESS);
    r[4] = idle;
    std::vector<int> seen;
    if (form == 0) {
      for (int k = 0; k < 4; ++k) {
        int idx = -1;
        MPI_Status st;
        ASSERT_EQ(MPI_Waitany(5, r, &idx, &st), MPI_SUCCESS);
        ASSERT_GE(idx, 0);
        ASSERT_LT(idx, 4);  // the inactive handle is never reported
        seen.push_back(idx);
        if (idx == 0) {
          EXPECT_EQ(st.MPI_SOURCE, left);
        }
      }
      int idx = -2;
      ASSERT_EQ(MPI_Waitany(5, r, &idx, MPI_STATUS_IGNORE), MPI_SUCCESS);
      EXPECT_EQ(idx, MPI_UNDEFINED);  // all inactive now
    } else if (form == 1 || form == 3) {
      while (seen.size() < 4) {
        int cnt = 0, idx[5];
        MPI_Status st[5];
        ASSERT_EQ(form == 1 ? MPI_Testsome(5, r, &cnt, idx, st) : MPI_Waitsome(5, r, &cnt, idx, st), MPI_SUCCESS);
        ASSERT_NE(cnt, MPI_UNDEFINED);
        for (int k = 0; k < cnt; ++k) seen.push_back(idx[k]);
      }
    } else if (form == 2) {
      while (seen.size() < 4) {
        int idx = -1, flag = 0;
        ASSERT_EQ(MPI_Testany(5, r, &idx, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
        if (flag && idx != MPI_UNDEFINED) seen.push_back(idx);
      }
    } else if (form == 4) {
      int flag = 0;
      MPI_Status st[5];
      while (!flag) ASSERT_EQ(MPI_Testall(5, r, &flag, st), MPI_SUCCESS);
      seen = {0, 1, 2, 3};
      EXPECT_EQ(st[0].MPI_TAG, 1);
      EXPECT_EQ(st[2].MPI_TAG, 2);
    } else {
      for (int k = 3; k >= 0; --k) {
        MPI_Status st;
        ASSERT_EQ(MPI_Wait(&r[k], &st), MPI_SUCCESS);
        seen.push_back(k);
      }
      MPI_Status st;
      ASSERT_EQ(MPI_Wait(&idle, &st), MPI_SUCCESS);  // inactive: at once, empty status
      EXPECT_EQ(st.MPI_TAG, MPI_ANY_TAG);
      EXPECT_EQ(st.MPI_SOURCE, MPI_ANY_SOURCE);
    }
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen, (std::vector<int>{0, 1, 2, 3})) << "form " << form;
    for (int k = 0; k < 5; ++k) ASSERT_NE(r[k], MPI_REQUEST_NULL);
    ASSERT_EQ(in, l.expected(left, form, 0)) << "form " << form;
    ASSERT_EQ(iin.v, Ints(64, left).v);
  }
  for (int k = 0; k < 4; ++k) MPI_Request_free(&r[k]);
  MPI_Request_free(&idle);
  MPI_Barrier(MPI_COMM_WORLD);
}

// One persistent wildcard receive collects every other rank's message.
TEST(Persistent, WildcardReceiveReportsSourceAndTag) {
  const int me = world_rank(), n = world_size();
  dtmpi::testing::RandomTypes gen(11);
  Layout l;
  make_layout(gen, 70000, l);
  if (me == 0) {
    std::vector<unsigned char> in(l.extent(), 0x5A);
    MPI_Request r;
    ASSERT_EQ(MPI_Recv_init(l.base(in), l.count, l.type, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r), MPI_SUCCESS);
    std::vector<int> got;
    for (int k = 1; k < n; ++k) {
      std::fill(in.begin(), in.end(), 0x5A);
      MPI_Start(&r);
      MPI_Status st;
      ASSERT_EQ(MPI_Wait(&r, &st), MPI_SUCCESS);
      ASSERT_GE(st.MPI_SOURCE, 1);
      EXPECT_EQ(st.MPI_TAG, 40 + st.MPI_SOURCE);
      ASSERT_EQ(in, l.expected(st.MPI_SOURCE, 7, 0x5A));
      got.push_back(st.MPI_SOURCE);
    }
    std::sort(got.begin(), got.end());
    for (int k = 1; k < n; ++k) EXPECT_EQ(got[static_cast<size_t>(k - 1)], k);
    MPI_Request_free(&r);
  } else {
    auto out = l.data(me, 7);
    MPI_Request r;
    MPI_Send_init(l.base(out), l.count, l.type, 0, 40 + me, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    MPI_Request_free(&r);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Synchronous, buffered and ready modes; a datatype freed after the init.
TEST(Persistent, ModesAndFreedDatatype) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  dtmpi::testing::RandomTypes gen(23);
  Layout l;
  make_layout(gen, 0, l);
  MPI_Datatype mine = MPI_DATATYPE_NULL;
  MPI_Type_dup(l.type, &mine);
  std::vector<unsigned char> out = l.data(me, 0), in(l.extent(), 0);
  int pack_size = 0;
  MPI_Pack_size(l.count, l.type, MPI_COMM_WORLD, &pack_size);
  std::vector<char> attached(static_cast<size_t>(pack_size) + MPI_BSEND_OVERHEAD + 64);
  MPI_Buffer_attach(attached.data(), static_cast<int>(attached.size()));
  MPI_Request sends[3], recv;
  MPI_Ssend_init(l.base(out), l.count, mine, right, 5, MPI_COMM_WORLD, &sends[0]);
  MPI_Bsend_init(l.base(out), l.count, mine, right, 5, MPI_COMM_WORLD, &sends[1]);
  MPI_Rsend_init(l.base(out), l.count, mine, right, 5, MPI_COMM_WORLD, &sends[2]);
  MPI_Recv_init(l.base(in), l.count, mine, left, 5, MPI_COMM_WORLD, &recv);
  dtmpi::testing::free_type(mine);  // allowed: the requests keep what they need
  for (int mode = 0; mode < 3; ++mode) {
    refill(out, l.data(me, mode));
    std::fill(in.begin(), in.end(), 0);
    ASSERT_EQ(MPI_Start(&recv), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);  // every receive is posted: ready mode is legal
    ASSERT_EQ(MPI_Start(&sends[mode]), MPI_SUCCESS);
    MPI_Request both[2] = {recv, sends[mode]};
    ASSERT_EQ(MPI_Waitall(2, both, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    ASSERT_EQ(in, l.expected(left, mode, 0)) << "mode " << mode << ": " << gen.recipe();
  }
  for (auto& s : sends) MPI_Request_free(&s);
  MPI_Request_free(&recv);
  void* detached = nullptr;
  int size = 0;
  MPI_Buffer_detach(&detached, &size);
  MPI_Barrier(MPI_COMM_WORLD);
}

// Cancel of a started receive nobody sends to; the same request then
// receives; MPI_Request_get_status; free of an active send request.
TEST(Persistent, CancelGetStatusAndFreeActive) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  dtmpi::testing::RandomTypes gen(31);
  Layout l;
  make_layout(gen, 70000, l);
  std::vector<unsigned char> in(l.extent(), 1);
  MPI_Request r;
  MPI_Recv_init(l.base(in), l.count, l.type, left, 9, MPI_COMM_WORLD, &r);
  ASSERT_EQ(MPI_Start(&r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Cancel(&r), MPI_SUCCESS);
  MPI_Status st;
  ASSERT_EQ(MPI_Wait(&r, &st), MPI_SUCCESS);
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  EXPECT_TRUE(cancelled);
  ASSERT_NE(r, MPI_REQUEST_NULL);
  MPI_Barrier(MPI_COMM_WORLD);  // nothing was sent with tag 9 before this

  // now a real message for it, sent by a request freed while active
  auto out = l.data(me, 3);
  MPI_Request s;
  MPI_Send_init(l.base(out), l.count, l.type, right, 9, MPI_COMM_WORLD, &s);
  std::fill(in.begin(), in.end(), 1);
  ASSERT_EQ(MPI_Start(&r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Start(&s), MPI_SUCCESS);
  int flag = 0;
  while (!flag) ASSERT_EQ(MPI_Request_get_status(r, &flag, &st), MPI_SUCCESS);
  EXPECT_EQ(st.MPI_SOURCE, left);
  ASSERT_EQ(in, l.expected(left, 3, 1));  // in place once get_status says complete
  ASSERT_EQ(MPI_Wait(&r, &st), MPI_SUCCESS);
  EXPECT_EQ(st.MPI_TAG, 9);
  ASSERT_EQ(MPI_Request_free(&s), MPI_SUCCESS);  // active or not: it completes on its own
  EXPECT_EQ(s, MPI_REQUEST_NULL);
  MPI_Request_free(&r);
  MPI_Barrier(MPI_COMM_WORLD);
  // the freed send finished: the buffer may go (a leak or a late read shows under ASan)
}

// Starting a dtmpi persistent request that is still active is an error
// reported through the communicator's error handler.
TEST(Persistent, StartingAnActiveRequestIsAnError) {
  if (!stage_host()) GTEST_SKIP() << "only dtmpi's own persistent requests are checked";
  const int me = world_rank(), n = world_size(), left = (me + n - 1) % n, right = (me + 1) % n;
  dtmpi::testing::RandomTypes gen(41);
  Layout l;
  make_layout(gen, 0, l);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  std::vector<unsigned char> in(l.extent(), 0);
  auto out = l.data(me, 0);
  MPI_Request r;
  MPI_Recv_init(l.base(in), l.count, l.type, left, 0, comm, &r);
  ASSERT_EQ(MPI_Start(&r), MPI_SUCCESS);
  EXPECT_NE(MPI_Start(&r), MPI_SUCCESS);
  MPI_Send(l.base(out), l.count, l.type, right, 0, comm);
  ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
  ASSERT_EQ(in, l.expected(left, 0, 0));
  MPI_Request_free(&r);
  MPI_Comm_free(&comm);
}
