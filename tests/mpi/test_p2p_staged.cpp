// The staged point-to-point path and its request engine, without GPUs: run
// with DTMPI_TEST_STAGE_HOST=1, so host buffers of derived types travel as
// packed bytes through staging buffers exactly as GPU buffers do. 2 and 4
// ranks; random types, wildcards, many outstanding requests, out-of-order
// completion, every Wait/Test form, free, cancel, probe, truncation.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "common/random_types.hpp"

#include "common/mpi_world.hpp"

namespace {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

// A random committed type, its buffer filled with a pattern of `seed`, and the
// packed bytes the system MPI makes of it.
struct Sample {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 1, size = 0;
  dtmpi::testing::Span span{};
  std::vector<unsigned char> buf;  // covers the span
  unsigned char* base() { return buf.data() - span.lo; }
  std::vector<unsigned char> packed() {
    std::vector<unsigned char> out(static_cast<size_t>(size) * count + 1);
    int pos = 0;
    PMPI_Pack(base(), count, type, out.data(), static_cast<int>(out.size()), &pos, MPI_COMM_SELF);
    out.resize(static_cast<size_t>(pos));
    return out;
  }
};

// Every rank makes the same sequence of types (same seed); buffers differ by rank.
Sample make_sample(dtmpi::testing::RandomTypes& gen, int fill) {
  Sample s;
  do {
    if (s.type != MPI_DATATYPE_NULL) dtmpi::testing::free_type(s.type);
    s.type = gen.make(3);
    MPI_Type_commit(&s.type);
    MPI_Type_size(s.type, &s.size);
  } while (s.size == 0);
  s.count = gen.uniform(1, 3);
  s.span = dtmpi::testing::span_of(s.type, s.count);
  s.buf.resize(static_cast<size_t>(s.span.hi - s.span.lo) + 1);
  for (size_t i = 0; i < s.buf.size(); ++i) s.buf[i] = static_cast<unsigned char>(fill * 37 + i * 11);
  return s;
}

bool overlaps(MPI_Datatype t, int count) {
  auto offs = dtmpi::testing::typemap_offsets(t, count);
  std::sort(offs.begin(), offs.end());
  return std::adjacent_find(offs.begin(), offs.end()) != offs.end();
}

}  // namespace

// A derived type on one side, packed bytes on the other, both directions;
// blocking and non-blocking; the bytes equal the system MPI's pack/unpack.
TEST(StagedP2P, RandomTypesAgainstPackedBytes) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  dtmpi::testing::RandomTypes gen(2024);
  for (int iter = 0; iter < 150; ++iter) {
    Sample mine = make_sample(gen, me), theirs = make_sample(gen, left);
    (void)theirs;
    // what the left neighbour sends: its sample packed
    Sample from_left = mine;
    for (size_t i = 0; i < from_left.buf.size(); ++i) from_left.buf[i] = static_cast<unsigned char>(left * 37 + i * 11);
    const auto want = from_left.packed();
    std::vector<unsigned char> got(want.size() + 1, 0);
    MPI_Status st;
    // derived type out (staged), bytes in (pass-through)
    ASSERT_EQ(MPI_Sendrecv(mine.base(), mine.count, mine.type, right, iter, got.data(), static_cast<int>(want.size()),
                           MPI_BYTE, left, iter, MPI_COMM_WORLD, &st),
              MPI_SUCCESS);
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size())) << gen.recipe();
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    ASSERT_EQ(bytes, static_cast<int>(want.size()));
    if (overlaps(mine.type, mine.count)) {
      dtmpi::testing::free_type(mine.type);
      continue;
    }
    // bytes out, derived type in (staged), non-blocking, unpacked at MPI_Wait
    std::vector<unsigned char> into(mine.buf.size(), 0xEE), ref(mine.buf.size(), 0xEE);
    int pos = 0;
    PMPI_Unpack(want.data(), static_cast<int>(want.size()), &pos, ref.data() - mine.span.lo, mine.count, mine.type,
                MPI_COMM_SELF);
    const auto mine_packed = mine.packed();
    MPI_Request r[2];
    ASSERT_EQ(MPI_Irecv(into.data() - mine.span.lo, mine.count, mine.type, left, 1000 + iter, MPI_COMM_WORLD, &r[0]),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Isend(mine_packed.data(), static_cast<int>(mine_packed.size()), MPI_BYTE, right, 1000 + iter,
                        MPI_COMM_WORLD, &r[1]),
              MPI_SUCCESS);
    MPI_Status sts[2];
    ASSERT_EQ(MPI_Waitall(2, r, sts), MPI_SUCCESS);
    ASSERT_EQ(into, ref) << gen.recipe();
    int cnt = -1;
    MPI_Get_count(&sts[0], mine.type, &cnt);
    EXPECT_EQ(cnt, mine.count);
    EXPECT_EQ(sts[0].MPI_SOURCE, left);
    EXPECT_EQ(sts[0].MPI_TAG, 1000 + iter);
    dtmpi::testing::free_type(mine.type);
  }
}

// Many outstanding staged requests with wildcards, completed out of order
// through every Wait/Test form.
TEST(StagedP2P, WildcardsManyRequestsOutOfOrder) {
  const int me = world_rank(), n = world_size();
  MPI_Datatype col;
  MPI_Type_vector(8, 1, 4, MPI_INT, &col);
  MPI_Type_commit(&col);
  constexpr int kMsgs = 24;
  // every rank sends kMsgs messages to rank 0 with tags 0..kMsgs-1; payload encodes (src, tag)
  if (me != 0) {
    std::vector<std::vector<int>> bufs(kMsgs, std::vector<int>(32));
    std::vector<MPI_Request> reqs(kMsgs);
    for (int t = kMsgs - 1; t >= 0; --t) {  // posted in reverse
      for (int i = 0; i < 32; ++i) bufs[t][i] = me * 10000 + t * 100 + i;
      ASSERT_EQ(MPI_Isend(bufs[t].data(), 1, col, 0, t, MPI_COMM_WORLD, &reqs[t]), MPI_SUCCESS);
    }
    // complete with Waitsome / Testany / Waitall mixed
    int left = kMsgs;
    std::vector<int> idx(kMsgs);
    int outc = 0;
    ASSERT_EQ(MPI_Waitsome(kMsgs, reqs.data(), &outc, idx.data(), MPI_STATUSES_IGNORE), MPI_SUCCESS);
    left -= outc;
    int index, flag;
    MPI_Testany(kMsgs, reqs.data(), &index, &flag, MPI_STATUS_IGNORE);
    ASSERT_EQ(MPI_Waitall(kMsgs, reqs.data(), MPI_STATUSES_IGNORE), MPI_SUCCESS);
    (void)left;
  } else {
    const int total = kMsgs * (n - 1);
    std::vector<std::vector<int>> bufs(total, std::vector<int>(32, -1));
    std::vector<MPI_Request> reqs(total);
    for (int k = 0; k < total; ++k)
      ASSERT_EQ(MPI_Irecv(bufs[k].data(), 1, col, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[k]), MPI_SUCCESS);
    std::vector<int> seen(static_cast<size_t>(n) * kMsgs, 0);
    int done = 0;
    while (done < total) {
      int index = MPI_UNDEFINED;
      MPI_Status st;
      if (done % 3 == 0) {
        ASSERT_EQ(MPI_Waitany(total, reqs.data(), &index, &st), MPI_SUCCESS);
      } else {
        int flag = 0;
        while (!flag) ASSERT_EQ(MPI_Testany(total, reqs.data(), &index, &flag, &st), MPI_SUCCESS);
      }
      ASSERT_NE(index, MPI_UNDEFINED);
      const int src = st.MPI_SOURCE, tag = st.MPI_TAG;
      for (int i = 0; i < 8; ++i) ASSERT_EQ(bufs[index][4 * i], src * 10000 + tag * 100 + 4 * i);
      for (int i = 0; i < 32; ++i)
        if (i % 4 != 0) {
          ASSERT_EQ(bufs[index][i], -1);  // outside the type: untouched
        }
      seen[static_cast<size_t>(src) * kMsgs + tag]++;
      ++done;
    }
    for (int s = 1; s < n; ++s)
      for (int t = 0; t < kMsgs; ++t) EXPECT_EQ(seen[static_cast<size_t>(s) * kMsgs + t], 1);
  }
  // non-overtaking: two messages with the same envelope arrive in order
  // (after a barrier: rank 0's wildcard receives above must not take them)
  MPI_Barrier(MPI_COMM_WORLD);
  if (n >= 2 && me < 2) {
    int a[32], b[32];
    if (me == 1) {
      std::iota(a, a + 32, 0);
      std::iota(b, b + 32, 100);
      MPI_Send(a, 1, col, 0, 7, MPI_COMM_WORLD);
      MPI_Send(b, 1, col, 0, 7, MPI_COMM_WORLD);
    } else {
      std::fill(a, a + 32, -1);
      std::fill(b, b + 32, -1);
      MPI_Recv(a, 1, col, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(b, 1, col, 1, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT_EQ(a[4], 4);
      EXPECT_EQ(b[4], 104);
    }
  }
  MPI_Type_free(&col);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(StagedP2P, FreeCancelProbeTruncateAndFriends) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  MPI_Datatype pair;  // 2 ints out of every 3
  MPI_Type_vector(5, 2, 3, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int src[15], dst[15];
  std::iota(src, src + 15, me * 100);

  // Request_free of a staged send: the message still arrives
  MPI_Request r;
  ASSERT_EQ(MPI_Isend(src, 1, pair, right, 1, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Request_free(&r), MPI_SUCCESS);
  EXPECT_EQ(r, MPI_REQUEST_NULL);
  // Probe sees the message with the user's type
  MPI_Status st;
  ASSERT_EQ(MPI_Probe(left, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  int cnt = 0;
  MPI_Get_count(&st, pair, &cnt);
  EXPECT_EQ(cnt, 1);
  MPI_Get_elements(&st, MPI_INT, &cnt);
  EXPECT_EQ(cnt, 10);
  std::fill(dst, dst + 15, -1);
  ASSERT_EQ(MPI_Recv(dst, 1, pair, left, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(dst[i], i % 3 == 2 ? -1 : left * 100 + i);

  // Cancel of a staged receive that nothing matches
  ASSERT_EQ(MPI_Irecv(dst, 1, pair, left, 999, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Cancel(&r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&r, &st), MPI_SUCCESS);
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  EXPECT_TRUE(cancelled);

  // Request_get_status, then Test
  std::fill(dst, dst + 15, -1);
  ASSERT_EQ(MPI_Irecv(dst, 1, pair, left, 2, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Ssend(src, 1, pair, right, 2, MPI_COMM_WORLD), MPI_SUCCESS);
  int flag = 0;
  while (!flag) MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
  EXPECT_EQ(dst[0], left * 100);  // already unpacked
  ASSERT_EQ(MPI_Test(&r, &flag, &st), MPI_SUCCESS);
  EXPECT_TRUE(flag);
  EXPECT_EQ(r, MPI_REQUEST_NULL);

  // Sendrecv_replace with the derived type
  int buf[15];
  std::iota(buf, buf + 15, me * 100);
  ASSERT_EQ(MPI_Sendrecv_replace(buf, 1, pair, right, 3, left, 3, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(buf[i], i % 3 == 2 ? me * 100 + i : left * 100 + i);

  // truncation: 2 elements sent, room for 1
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int big[30];
  std::iota(big, big + 30, 0);
  MPI_Request sr;
  ASSERT_EQ(MPI_Isend(big, 2, pair, right, 4, MPI_COMM_WORLD, &sr), MPI_SUCCESS);
  int rc = MPI_Recv(dst, 1, pair, left, 4, MPI_COMM_WORLD, &st);
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  EXPECT_EQ(cls, MPI_ERR_TRUNCATE);
  MPI_Wait(&sr, MPI_STATUS_IGNORE);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Type_free(&pair);
  MPI_Barrier(MPI_COMM_WORLD);
}

// The tests above really went through the staged path.
TEST(StagedP2P, StagedPathWasTaken) {
  auto stats = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "dtmpi_stats"));
  ASSERT_NE(stats, nullptr);
  const std::string text = stats();
  EXPECT_EQ(text.find("staged sends 0,"), std::string::npos) << text;
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (env("DTMPI_TEST_STAGE_HOST") == "1" || env("DTMPI_HOST_RECV") == "staged") {
    EXPECT_EQ(text.find("staged receives 0;"), std::string::npos) << text;
    EXPECT_NE(text.find("staged receives "), std::string::npos) << text;
  } else if (env("DTMPI_HOST_RECV") == "direct") {
    // dtmpi packs on the sender, the system MPI unpacks the MPI_PACKED bytes
    // with the receiver's datatype (runtime::host_receive_direct)
    EXPECT_NE(text.find("staged receives 0;"), std::string::npos) << text;
  }
}
