// Matched probes and receives (MPI_Mprobe, MPI_Improbe, MPI_Mrecv,
// MPI_Imrecv) through dtmpi. With DTMPI_TEST_STAGE_HOST=1 and a multi-message
// DTMPI_METHOD, a derived-type send of 64 KiB or more travels as a 232-byte
// descriptor plus the rest on dtmpi's private communicator, as a GPU send
// does: a matched probe must report the real size and the matched receive
// must deliver the data (not the descriptor), into plain bytes or a derived
// layout, after an MPI_Probe took the message too; raw 232-byte messages,
// small messages and MPI_PROC_NULL stay what they are.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/mpi_world.hpp"
#include "common/random_types.hpp"

namespace {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

// A vector of doubles: `blocks` blocks of 3, stride 5.
struct Strided {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int blocks;
  explicit Strided(int b) : blocks(b) {
    MPI_Type_vector(b, 3, 5, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
  }
  ~Strided() { MPI_Type_free(&type); }
  size_t span_doubles() const { return static_cast<size_t>(blocks) * 5; }
  size_t packed_bytes() const { return static_cast<size_t>(blocks) * 3 * sizeof(double); }
  std::vector<double> data(int who) const {
    std::vector<double> v(span_doubles());
    for (size_t i = 0; i < v.size(); ++i) v[i] = who * 1e6 + static_cast<double>(i);
    return v;
  }
  std::vector<unsigned char> packed(int who) const {
    auto v = data(who);
    std::vector<unsigned char> out(packed_bytes());
    int pos = 0;
    PMPI_Pack(v.data(), 1, type, out.data(), static_cast<int>(out.size()), &pos, MPI_COMM_SELF);
    return out;
  }
};

}  // namespace

// Large (descriptor) and small messages; received as bytes of the probed
// size, and into the derived layout; blocking and non-blocking forms.
TEST(MatchedProbe, ReportsTheRealSizeAndDeliversTheData) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  for (int blocks : {4, 3000, 20000}) {  // 96 B, 72 KB, 480 KB packed
    Strided s(blocks);
    auto out = s.data(me);
    MPI_Request sr[2];
    MPI_Isend(out.data(), 1, s.type, right, 1, MPI_COMM_WORLD, &sr[0]);
    MPI_Isend(out.data(), 1, s.type, right, 2, MPI_COMM_WORLD, &sr[1]);
    // tag 1: blocking matched probe, received as the bytes it reports
    MPI_Message msg;
    MPI_Status st;
    ASSERT_EQ(MPI_Mprobe(left, 1, MPI_COMM_WORLD, &msg, &st), MPI_SUCCESS);
    int bytes = -1;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    ASSERT_EQ(bytes, static_cast<int>(s.packed_bytes())) << blocks;
    EXPECT_EQ(st.MPI_SOURCE, left);
    std::vector<unsigned char> got(static_cast<size_t>(bytes));
    ASSERT_EQ(MPI_Mrecv(got.data(), bytes, MPI_BYTE, &msg, &st), MPI_SUCCESS);
    EXPECT_EQ(msg, MPI_MESSAGE_NULL);
    ASSERT_EQ(got, s.packed(left)) << blocks;
    // tag 2: non-blocking matched probe from anyone, into the derived layout
    int flag = 0;
    while (!flag) ASSERT_EQ(MPI_Improbe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, &msg, &st), MPI_SUCCESS);
    EXPECT_EQ(st.MPI_SOURCE, left);
    std::vector<double> into(s.span_doubles(), -1.0);
    MPI_Request rr;
    ASSERT_EQ(MPI_Imrecv(into.data(), 1, s.type, &msg, &rr), MPI_SUCCESS);
    ASSERT_EQ(MPI_Wait(&rr, &st), MPI_SUCCESS);
    int elems = -1;
    MPI_Get_count(&st, s.type, &elems);
    EXPECT_EQ(elems, 1);
    auto want = s.data(left);
    for (size_t i = 0; i < into.size(); ++i) {
      const bool in_block = i % 5 < 3;
      ASSERT_EQ(into[i], in_block ? want[i] : -1.0) << "blocks " << blocks << " at " << i;
    }
    MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// A message an MPI_Probe took (it had to read a 232-byte arrival) is the one
// the next matched probe hands out; a raw 232-byte message is not mistaken
// for a descriptor; MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC.
TEST(MatchedProbe, AfterProbeRawDescriptorSizedAndProcNull) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  Strided big(5000);
  auto out = big.data(me);
  std::vector<unsigned char> raw(232);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<unsigned char>(me + i * 3);
  MPI_Request sr[2];
  MPI_Isend(out.data(), 1, big.type, right, 7, MPI_COMM_WORLD, &sr[0]);
  MPI_Isend(raw.data(), 232, MPI_BYTE, right, 8, MPI_COMM_WORLD, &sr[1]);
  for (int tag : {7, 8}) {
    MPI_Status st;
    ASSERT_EQ(MPI_Probe(left, tag, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    int probed = -1;
    MPI_Get_count(&st, MPI_BYTE, &probed);
    MPI_Message msg;
    ASSERT_EQ(MPI_Mprobe(left, tag, MPI_COMM_WORLD, &msg, &st), MPI_SUCCESS);
    int bytes = -1;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    EXPECT_EQ(bytes, probed);
    std::vector<unsigned char> got(static_cast<size_t>(bytes));
    ASSERT_EQ(MPI_Mrecv(got.data(), bytes, MPI_BYTE, &msg, &st), MPI_SUCCESS);
    if (tag == 7) {
      ASSERT_EQ(bytes, static_cast<int>(big.packed_bytes()));
      ASSERT_EQ(got, big.packed(left));
    } else {
      ASSERT_EQ(bytes, 232);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<unsigned char>(left + i * 3));
    }
  }
  MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
  MPI_Message none;
  MPI_Status st;
  ASSERT_EQ(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &none, &st), MPI_SUCCESS);
  EXPECT_EQ(none, MPI_MESSAGE_NO_PROC);
  EXPECT_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
  ASSERT_EQ(MPI_Mrecv(nullptr, 0, MPI_BYTE, &none, &st), MPI_SUCCESS);
  MPI_Barrier(MPI_COMM_WORLD);
}
