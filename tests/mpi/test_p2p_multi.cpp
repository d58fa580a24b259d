// The multi-message transfer protocol (descriptor on the user's envelope, the
// rest on dtmpi's private communicator) without GPUs: run with
// DTMPI_TEST_STAGE_HOST=1 and DTMPI_METHOD=pipelined or device (which is a
// rendezvous in host memory), so host buffers of derived types of at least
// 64 KiB take exactly the state machines GPU buffers take. Receivers use the
// sender's type, a different type of the same signature, or plain bytes (the
// descriptor then lands in the user's own buffer and must be recognized
// there); senders send derived types or plain packed bytes. Wildcards, many
// outstanding requests completed out of order, non-overtaking, truncation,
// cancel, synchronous and buffered modes, Sendrecv_replace, Request_free
// (completion rules: test_p2p_multi_completion.cpp, same binary).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/random_types.hpp"
#include "dtmpi/dtmpi.h"

#include "common/mpi_world.hpp"
#include "mpi/p2p_multi.hpp"

namespace {

using dtmpi::testing::barrier;
using dtmpi::testing::stat_value;
using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

constexpr int kMin = 64 * 1024;  // transport::kMultiMin

// A committed random type with `count` elements of at least `min_bytes`, a
// buffer filled by `fill`, and its packed bytes by the system MPI.
struct Large {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 1, size = 0;
  dtmpi::testing::Span span{};
  std::vector<unsigned char> buf;
  unsigned char* base() { return buf.data() - span.lo; }
  void fill(int f) {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(f * 37 + i * 11 + (i >> 8));
  }
  std::vector<unsigned char> packed() {
    std::vector<unsigned char> out(static_cast<size_t>(size) * count);
    int pos = 0;
    PMPI_Pack(base(), count, type, out.data(), static_cast<int>(out.size()), &pos, MPI_COMM_SELF);
    return out;
  }
  int64_t bytes() const { return int64_t{size} * count; }
  ~Large() {
    if (type != MPI_DATATYPE_NULL) dtmpi::testing::free_type(type);
  }
};

bool overlaps(MPI_Datatype t, int count) {
  auto offs = dtmpi::testing::typemap_offsets(t, count);
  std::sort(offs.begin(), offs.end());
  return std::adjacent_find(offs.begin(), offs.end()) != offs.end();
}

// Same sequence on every rank (same seed).
void make_large(dtmpi::testing::RandomTypes& gen, int64_t min_bytes, Large& l) {
  for (;;) {
    MPI_Datatype t = gen.make(3);
    MPI_Type_commit(&t);
    int size = 0;
    MPI_Type_size(t, &size);
    const int count = size > 0 ? static_cast<int>((min_bytes + size - 1) / size) : 0;
    if (size > 0 && count < 200000) {
      auto span = dtmpi::testing::span_of(t, count);
      if (span.hi - span.lo < (int64_t{24} << 20) && !overlaps(t, 1)) {
        l.type = t;
        l.size = size;
        l.count = count;
        l.span = span;
        l.buf.assign(static_cast<size_t>(span.hi - span.lo) + 1, 0);
        return;
      }
    }
    dtmpi::testing::free_type(t);
  }
}

// The user's bytes after unpacking `packed` into a poisoned copy of `l`.
std::vector<unsigned char> expected_unpack(Large& l, const std::vector<unsigned char>& packed) {
  std::vector<unsigned char> keep = l.buf;
  std::fill(l.buf.begin(), l.buf.end(), 0xEE);
  int pos = 0;
  PMPI_Unpack(packed.data(), static_cast<int>(packed.size()), &pos, l.base(), l.count, l.type, MPI_COMM_SELF);
  std::vector<unsigned char> out = l.buf;
  l.buf = keep;
  return out;
}

}  // namespace

// Every combination of derived/plain sender and receiver, blocking and not,
// wildcard or named source; results equal the system MPI's pack and unpack.
TEST(MultiMessageP2P, LargeRandomTypesEveryShape) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  dtmpi::testing::RandomTypes gen(777);
  const uint64_t multi_before = stat_value("multi-message sends ");
  for (int iter = 0; iter < 24; ++iter) {
    Large mine, theirs;
    make_large(gen, kMin + gen.uniform(0, 3) * 40000, mine);
    make_large(gen, 0, theirs);  // unused shape: keeps the sequence moving
    mine.fill(me + iter);
    const int send_form = iter % 2;         // 0: derived type, 1: plain packed bytes
    const int recv_form = (iter / 2) % 3;   // 0: same type, 1: bytes exact, 2: bytes with room
    const bool blocking = (iter / 6) % 2;
    const int source = (n == 2 && iter % 3 == 0) ? MPI_ANY_SOURCE : left;
    const int tag = iter % 4 == 1 ? MPI_ANY_TAG : iter;

    // what the left neighbour sends: its buffer packed
    Large peer;
    peer.type = mine.type;
    peer.size = mine.size;
    peer.count = mine.count;
    peer.span = mine.span;
    peer.buf.resize(mine.buf.size());
    peer.fill(left + iter);
    const std::vector<unsigned char> expect_packed = peer.packed();
    peer.type = MPI_DATATYPE_NULL;  // owned by `mine`

    std::vector<unsigned char> my_packed = mine.packed();
    std::vector<unsigned char> rbytes(static_cast<size_t>(mine.bytes() + (recv_form == 2 ? 5000 : 0)), 0xEE);
    Large recv;
    recv.type = MPI_DATATYPE_NULL;
    recv.size = mine.size;
    recv.count = mine.count;
    recv.span = mine.span;
    recv.buf.assign(mine.buf.size(), 0xEE);

    MPI_Request reqs[2];
    MPI_Status st;
    void* rbuf = recv_form == 0 ? static_cast<void*>(recv.base()) : rbytes.data();
    const int rcount = recv_form == 0 ? mine.count : static_cast<int>(rbytes.size());
    MPI_Datatype rtype = recv_form == 0 ? mine.type : MPI_BYTE;
    ASSERT_EQ(MPI_Irecv(rbuf, rcount, rtype, source, tag, MPI_COMM_WORLD, &reqs[0]), MPI_SUCCESS);
    if (send_form == 0)
      ASSERT_EQ(MPI_Isend(mine.base(), mine.count, mine.type, right, iter, MPI_COMM_WORLD, &reqs[1]), MPI_SUCCESS);
    else
      ASSERT_EQ(MPI_Isend(my_packed.data(), static_cast<int>(my_packed.size()), MPI_BYTE, right, iter,
                          MPI_COMM_WORLD, &reqs[1]),
                MPI_SUCCESS);
    if (blocking) {
      ASSERT_EQ(MPI_Wait(&reqs[0], &st), MPI_SUCCESS);
      ASSERT_EQ(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE), MPI_SUCCESS);
    } else {
      int done = 0, idx = 0;
      while (done < 2) {
        int flag = 0;
        MPI_Status s2;
        ASSERT_EQ(MPI_Testany(2, reqs, &idx, &flag, &s2), MPI_SUCCESS);
        if (flag) {
          if (idx == 0) st = s2;
          ++done;
        }
      }
    }
    EXPECT_EQ(st.MPI_SOURCE, left) << iter;
    EXPECT_EQ(st.MPI_TAG, iter) << iter;
    int cnt = -1;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    EXPECT_EQ(cnt, mine.bytes()) << iter;
    MPI_Get_count(&st, mine.type, &cnt);
    EXPECT_EQ(cnt, mine.count) << iter;
    if (recv_form == 0) {
      recv.type = mine.type;
      EXPECT_TRUE(recv.buf == expected_unpack(recv, expect_packed)) << "iter " << iter << ": " << gen.recipe();
      recv.type = MPI_DATATYPE_NULL;
    } else {
      EXPECT_TRUE(std::equal(expect_packed.begin(), expect_packed.end(), rbytes.begin())) << iter;
      EXPECT_TRUE(std::all_of(rbytes.begin() + static_cast<long>(expect_packed.size()), rbytes.end(),
                              [](unsigned char c) { return c == 0xEE; }));
    }
  }
  // the derived-type sends of at least 64 KiB took a multi-message method
  EXPECT_GE(stat_value("multi-message sends ") - multi_before, 12u);
  barrier();
}

// Many transfers in flight at once, completed in a scrambled order; an
// MPI_ANY_TAG receive series sees the sender's order (non-overtaking).
TEST(MultiMessageP2P, ManyOutstandingNonOvertaking) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  constexpr int kMsgs = 8;
  MPI_Datatype vec;  // 3 of every 4 doubles
  MPI_Type_vector(4096, 3, 4, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  const int per = 4096 * 4;
  std::vector<std::vector<double>> out(kMsgs, std::vector<double>(per * 3)), in(kMsgs);
  std::vector<MPI_Request> reqs(2 * kMsgs);
  for (int k = 0; k < kMsgs; ++k) {
    const int count = 1 + k % 3;  // 96..288 KiB
    for (size_t i = 0; i < out[k].size(); ++i) out[k][i] = me * 1e6 + k * 1e4 + static_cast<double>(i);
    in[k].assign(static_cast<size_t>(3 * 4096 * 3), -1.0);
    ASSERT_EQ(MPI_Irecv(in[k].data(), 3 * 4096 * 3, MPI_DOUBLE, left, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[k]),
              MPI_SUCCESS);
    (void)count;
  }
  for (int k = 0; k < kMsgs; ++k)
    ASSERT_EQ(MPI_Isend(out[k].data(), 1 + k % 3, vec, right, 100 + k, MPI_COMM_WORLD, &reqs[kMsgs + k]),
              MPI_SUCCESS);
  std::vector<MPI_Status> sts(2 * kMsgs);
  int remaining = 2 * kMsgs;
  std::vector<int> idx(2 * kMsgs);
  while (remaining > 0) {
    int outc = 0;
    std::vector<MPI_Status> got(2 * kMsgs);
    ASSERT_EQ(MPI_Waitsome(2 * kMsgs, reqs.data(), &outc, idx.data(), got.data()), MPI_SUCCESS);
    ASSERT_NE(outc, MPI_UNDEFINED);
    for (int j = 0; j < outc; ++j) sts[static_cast<size_t>(idx[j])] = got[static_cast<size_t>(j)];
    remaining -= outc;
  }
  for (int k = 0; k < kMsgs; ++k) {
    EXPECT_EQ(sts[k].MPI_TAG, 100 + k) << "message " << k << " overtaken";
    int cnt = 0;
    MPI_Get_count(&sts[k], vec, &cnt);
    EXPECT_EQ(cnt, 1 + k % 3);
    // packed: the first 3 of every 4 doubles of the sender's buffer
    const int64_t nvals = int64_t{cnt} * 4096 * 3;
    bool ok = true;
    for (int64_t v = 0; v < nvals && ok; ++v) {
      const int64_t e = v / (4096 * 3), w = v % (4096 * 3);  // element, value in it
      const int64_t src = e * (4095 * 4 + 3) + (w / 3) * 4 + w % 3;
      ok = in[k][static_cast<size_t>(v)] == left * 1e6 + k * 1e4 + static_cast<double>(src);
    }
    EXPECT_TRUE(ok) << "message " << k;
  }
  MPI_Type_free(&vec);
  barrier();
}

TEST(MultiMessageP2P, TruncateCancelModesReplaceFree) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype vec;  // 1 of every 2 ints, 32768 of them: 128 KiB packed
  MPI_Type_vector(32768, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  std::vector<int> src(65536), dst(65536);
  for (int i = 0; i < 65536; ++i) src[static_cast<size_t>(i)] = me * 1000000 + i;
  auto check_from_left = [&](const std::vector<int>& d, int stride) {
    for (int i = 0; i < 32768; ++i)
      if (d[static_cast<size_t>(i * stride)] != left * 1000000 + 2 * i) return false;
    return true;
  };

  // truncation: into plain bytes and into a smaller derived receive; the
  // transfer is drained, so the next message still arrives intact
  for (int form = 0; form < 2; ++form) {
    MPI_Request r;
    ASSERT_EQ(MPI_Isend(src.data(), 1, vec, right, 5, MPI_COMM_WORLD, &r), MPI_SUCCESS);
    MPI_Status st;
    int rc;
    if (form == 0) {
      rc = MPI_Recv(dst.data(), 100000, MPI_BYTE, left, 5, MPI_COMM_WORLD, &st);
    } else {
      MPI_Datatype small;
      MPI_Type_vector(20000, 1, 2, MPI_INT, &small);
      MPI_Type_commit(&small);
      MPI_Request rr;
      ASSERT_EQ(MPI_Irecv(dst.data(), 1, small, left, 5, MPI_COMM_WORLD, &rr), MPI_SUCCESS);
      rc = MPI_Wait(&rr, &st);
      if (rc == MPI_ERR_IN_STATUS) rc = st.MPI_ERROR;
      MPI_Type_free(&small);
    }
    int cls = 0;
    MPI_Error_class(rc, &cls);
    EXPECT_EQ(cls, MPI_ERR_TRUNCATE) << "form " << form;
    ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    std::fill(dst.begin(), dst.end(), -1);
    ASSERT_EQ(MPI_Sendrecv(src.data(), 1, vec, right, 6, dst.data(), 32768, MPI_INT, left, 6, MPI_COMM_WORLD, &st),
              MPI_SUCCESS);
    EXPECT_TRUE(check_from_left(dst, 1)) << "after truncation " << form;
  }

  // cancel of a receive that could meet a descriptor and never does
  {
    MPI_Request r;
    ASSERT_EQ(MPI_Irecv(dst.data(), 1, vec, left, 999, MPI_COMM_WORLD, &r), MPI_SUCCESS);
    ASSERT_EQ(MPI_Cancel(&r), MPI_SUCCESS);
    MPI_Status st;
    ASSERT_EQ(MPI_Wait(&r, &st), MPI_SUCCESS);
    int c = 0;
    MPI_Test_cancelled(&st, &c);
    EXPECT_TRUE(c);
  }

  // synchronous and ready modes, blocking receive with the same type
  for (int mode = 0; mode < 3; ++mode) {
    std::fill(dst.begin(), dst.end(), -1);
    MPI_Request rr;
    ASSERT_EQ(MPI_Irecv(dst.data(), 1, vec, left, 10 + mode, MPI_COMM_WORLD, &rr), MPI_SUCCESS);
    barrier();  // ready mode needs the receive posted
    if (mode == 0) {
      ASSERT_EQ(MPI_Ssend(src.data(), 1, vec, right, 10, MPI_COMM_WORLD), MPI_SUCCESS);
    }
    if (mode == 1) {
      ASSERT_EQ(MPI_Rsend(src.data(), 1, vec, right, 11, MPI_COMM_WORLD), MPI_SUCCESS);
    }
    if (mode == 2) {
      MPI_Request sr;
      ASSERT_EQ(MPI_Issend(src.data(), 1, vec, right, 12, MPI_COMM_WORLD, &sr), MPI_SUCCESS);
      ASSERT_EQ(MPI_Wait(&sr, MPI_STATUS_IGNORE), MPI_SUCCESS);
    }
    ASSERT_EQ(MPI_Wait(&rr, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT_TRUE(check_from_left(dst, 2)) << "mode " << mode;
  }

  // Sendrecv_replace around the ring
  {
    std::vector<int> buf = src;
    MPI_Status st;
    ASSERT_EQ(MPI_Sendrecv_replace(buf.data(), 1, vec, right, 20, left, 20, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    EXPECT_TRUE(check_from_left(buf, 2));
    for (int i = 0; i < 32768; ++i) EXPECT_EQ(buf[static_cast<size_t>(2 * i + 1)], src[static_cast<size_t>(2 * i + 1)]);
  }

  MPI_Type_free(&vec);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  barrier();
}

// Request_free of a send, then the sender goes on into a collective: the
// message still arrives and the sender's buffer is free at once. (Not run in
// the IPC-fallback mode: that path needs the sender to enter dtmpi again,
// see docs/point-to-point.md.)
TEST(MultiMessageP2P, RequestFreeOfSend) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  MPI_Datatype vec;
  MPI_Type_vector(32768, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  std::vector<int> tmp(65536), dst(65536, -1);
  for (int i = 0; i < 65536; ++i) tmp[static_cast<size_t>(i)] = me * 1000000 + i;
  MPI_Request r;
  ASSERT_EQ(MPI_Isend(tmp.data(), 1, vec, right, 30, MPI_COMM_WORLD, &r), MPI_SUCCESS);
  ASSERT_EQ(MPI_Request_free(&r), MPI_SUCCESS);
  std::fill(tmp.begin(), tmp.end(), -7);
  ASSERT_EQ(MPI_Recv(dst.data(), 1, vec, left, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
  for (int i = 0; i < 32768; ++i) ASSERT_EQ(dst[static_cast<size_t>(2 * i)], left * 1000000 + 2 * i);
  MPI_Type_free(&vec);
  barrier();
}

// A probe reports a multi-message transfer with its real size, as often as
// asked, and the receive that follows gets it; a raw message of exactly a
// descriptor's size (which a probe must read to tell apart) arrives intact
// into host bytes and into a derived type.
TEST(MultiMessageP2P, ProbeSeesRealSizes) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  MPI_Datatype vec, small;
  MPI_Type_vector(32768, 1, 2, MPI_INT, &vec);  // 128 KiB packed
  MPI_Type_commit(&vec);
  MPI_Type_vector(58, 1, 2, MPI_INT, &small);  // 232 bytes packed: a descriptor's size
  MPI_Type_commit(&small);
  std::vector<int> src(65536), dst(65536, -1);
  for (int i = 0; i < 65536; ++i) src[static_cast<size_t>(i)] = me * 1000000 + i;
  MPI_Request reqs[3];
  ASSERT_EQ(MPI_Isend(src.data(), 1, vec, right, 40, MPI_COMM_WORLD, &reqs[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(src.data(), 1, small, right, 41, MPI_COMM_WORLD, &reqs[1]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Isend(src.data(), 1, small, right, 42, MPI_COMM_WORLD, &reqs[2]), MPI_SUCCESS);
  MPI_Status st;
  for (int k = 0; k < 2; ++k) {  // twice: the same message
    ASSERT_EQ(MPI_Probe(n == 2 ? MPI_ANY_SOURCE : left, 40, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    int cnt = 0;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    EXPECT_EQ(cnt, 131072);
    MPI_Get_count(&st, vec, &cnt);
    EXPECT_EQ(cnt, 1);
    EXPECT_EQ(st.MPI_SOURCE, left);
  }
  int flag = 0;
  ASSERT_EQ(MPI_Iprobe(left, 40, MPI_COMM_WORLD, &flag, &st), MPI_SUCCESS);
  EXPECT_TRUE(flag);
  ASSERT_EQ(MPI_Recv(dst.data(), 32768, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  for (int i = 0; i < 32768; ++i) ASSERT_EQ(dst[static_cast<size_t>(i)], left * 1000000 + 2 * i);
  // raw 232-byte messages: probed (and so taken out of the system MPI), then received
  do {
    ASSERT_EQ(MPI_Iprobe(left, 41, MPI_COMM_WORLD, &flag, &st), MPI_SUCCESS);
  } while (!flag);
  int cnt = 0;
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  EXPECT_EQ(cnt, 232);
  ASSERT_EQ(MPI_Probe(left, 42, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  std::vector<int> bytes_in(58, -1);
  ASSERT_EQ(MPI_Recv(bytes_in.data(), 232, MPI_BYTE, left, 41, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  for (int i = 0; i < 58; ++i) EXPECT_EQ(bytes_in[static_cast<size_t>(i)], left * 1000000 + 2 * i);
  std::fill(dst.begin(), dst.end(), -1);
  MPI_Request rr;
  ASSERT_EQ(MPI_Irecv(dst.data(), 1, small, left, MPI_ANY_TAG, MPI_COMM_WORLD, &rr), MPI_SUCCESS);
  ASSERT_EQ(MPI_Wait(&rr, &st), MPI_SUCCESS);
  EXPECT_EQ(st.MPI_TAG, 42);
  for (int i = 0; i < 116; ++i) EXPECT_EQ(dst[static_cast<size_t>(i)], i % 2 ? -1 : left * 1000000 + i);
  ASSERT_EQ(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  MPI_Type_free(&vec);
  MPI_Type_free(&small);
  barrier();
}

// MPI_THREAD_MULTIPLE: several threads per rank run multi-message transfers
// (and their progress) at once, each on its own tags; every byte arrives.
TEST(MultiMessageP2P, ThreadsAtOnce) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "the system MPI does not provide MPI_THREAD_MULTIPLE";
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  MPI_Datatype vec;
  MPI_Type_vector(32768, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<int> src(65536), dst(65536);
      for (int r = 0; r < kRounds; ++r) {
        for (int i = 0; i < 65536; ++i) src[static_cast<size_t>(i)] = me * 1000000 + t * 10000 + r * 100 + i % 97;
        MPI_Request q[2];
        MPI_Irecv(dst.data(), 1, vec, left, 1000 + t, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(src.data(), 1, vec, right, 1000 + t, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 65536; i += 2)
          if (dst[static_cast<size_t>(i)] != left * 1000000 + t * 10000 + r * 100 + i % 97) ++bad[t];
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  MPI_Type_free(&vec);
  barrier();
}
