// Messages that end inside an element of the receive type (issue 20, item 4):
// MPI fills the received prefix of the typemap, MPI_Get_count says
// MPI_UNDEFINED and MPI_Get_elements counts the basic elements that arrived.
// Linked into test_p2p_staged (single messages: the host test mode, the
// default host policy with staged and direct receives) and test_p2p_multi
// (host mode: pipelined transfers and the device method's fallback through
// host memory), so every host receive path meets them: one-message staging,
// the landing receive of a possible descriptor, and the multi-message payload.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/mpi_world.hpp"
#include "common/random_types.hpp"

namespace {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

struct PartialCase {
  std::string name;
  MPI_Datatype type;
  int count;            // the receive's
  int bytes;            // the message's, less than count elements and not whole ones
  int basic_elements;   // MPI_Get_elements of the message
};

// Types of doubles only (a vector of doubles sends the same signature).
std::vector<PartialCase> partial_cases() {
  std::vector<PartialCase> out;
  MPI_Datatype h, big;
  // zero-length blocks between the filled ones: 2+0+1+0+3 doubles, 48 bytes
  const int lens[5] = {2, 0, 1, 0, 3};
  const MPI_Aint displs[5] = {0, 24, 40, 56, 72};
  MPI_Type_create_hindexed(5, lens, displs, MPI_DOUBLE, &h);
  MPI_Type_commit(&h);
  // 8200 bytes an element: 16 bytes are less than one
  MPI_Type_vector(1025, 1, 2, MPI_DOUBLE, &big);
  MPI_Type_commit(&big);
  out.push_back({"hindexed with empty blocks, 3 elements + 16 B", h, 5, 3 * 48 + 16, 3 * 6 + 2});
  out.push_back({"8200-B element, 16 B", big, 2, 16, 2});
  out.push_back({"8200-B element, 1 element + 24 B", big, 2, 8200 + 24, 1025 + 3});
  // beyond 64 KiB: the multi-message protocol where it runs
  out.push_back({"hindexed with empty blocks, 1400 elements + 24 B", h, 1500, 1400 * 48 + 24, 1400 * 6 + 3});
  out.push_back({"8200-B element, 9 elements + 16 B", big, 10, 9 * 8200 + 16, 9 * 1025 + 2});
  return out;
}

// `bytes` of distinct values as `n` doubles, every other one of a buffer (the
// layout the strided sender sends from).
std::vector<double> strided_source(int bytes, int seed) {
  std::vector<double> v(static_cast<size_t>(bytes / 8) * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed * 1e6 + static_cast<double>(i);
  return v;
}

}  // namespace

TEST(PartialElements, ReceivedPrefixIsUnpacked) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  int tag = 700;
  auto cases = partial_cases();
  for (const auto& c : cases) {
    const auto offs = dtmpi::testing::typemap_offsets(c.type, c.count);
    const auto span = dtmpi::testing::span_of(c.type, c.count);
    ASSERT_EQ(span.lo, 0);
    // what arrives: the left neighbour's doubles (from its strided source)
    const auto theirs = strided_source(c.bytes, left + 1), mine = strided_source(c.bytes, me + 1);
    std::vector<unsigned char> packed_in(static_cast<size_t>(c.bytes)), packed_out(packed_in.size());
    for (int k = 0; k < c.bytes / 8; ++k) {
      std::memcpy(&packed_in[static_cast<size_t>(k) * 8], &theirs[static_cast<size_t>(k) * 2], 8);
      std::memcpy(&packed_out[static_cast<size_t>(k) * 8], &mine[static_cast<size_t>(k) * 2], 8);
    }
    std::vector<unsigned char> want(static_cast<size_t>(span.hi) + 16, 0xee);
    for (size_t i = 0; i < packed_in.size(); ++i) want[static_cast<size_t>(offs[i])] = packed_in[i];
    MPI_Datatype strided;  // the sender's layout: one element of every other double
    MPI_Type_vector(c.bytes / 8, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    // packed bytes (passed through) and a derived type (staged by dtmpi), each
    // received blocking and non-blocking
    for (int how = 0; how < 4; ++how, ++tag) {
      SCOPED_TRACE(c.name + (how % 2 ? ", strided sender" : ", packed sender") +
                   (how / 2 ? ", MPI_Irecv + MPI_Waitall" : ", MPI_Recv"));
      std::vector<unsigned char> got(want.size(), 0xee);
      MPI_Request sr, rr;
      if (how % 2)
        ASSERT_EQ(MPI_Isend(mine.data(), 1, strided, right, tag, MPI_COMM_WORLD, &sr), MPI_SUCCESS);
      else
        ASSERT_EQ(MPI_Isend(packed_out.data(), c.bytes, MPI_PACKED, right, tag, MPI_COMM_WORLD, &sr), MPI_SUCCESS);
      MPI_Status st;
      if (how / 2 == 0) {
        ASSERT_EQ(MPI_Recv(got.data(), c.count, c.type, left, tag, MPI_COMM_WORLD, &st), MPI_SUCCESS);
      } else {
        ASSERT_EQ(MPI_Irecv(got.data(), c.count, c.type, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &rr), MPI_SUCCESS);
        ASSERT_EQ(MPI_Waitall(1, &rr, &st), MPI_SUCCESS);
      }
      ASSERT_EQ(MPI_Wait(&sr, MPI_STATUS_IGNORE), MPI_SUCCESS);
      int count = 0, elements = 0, bytes = 0;
      MPI_Get_count(&st, c.type, &count);
      MPI_Get_elements(&st, c.type, &elements);
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      EXPECT_EQ(count, MPI_UNDEFINED);
      EXPECT_EQ(elements, c.basic_elements);
      EXPECT_EQ(bytes, c.bytes);
      EXPECT_EQ(st.MPI_SOURCE, left);
      size_t wrong = 0, first = 0;
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i] && wrong++ == 0) first = i;
      EXPECT_EQ(wrong, 0u) << "bytes differ from the received prefix of the typemap, the first at " << first;
    }
    MPI_Type_free(&strided);
  }
  for (auto& c : cases)
    if (c.type != MPI_DATATYPE_NULL) {
      const MPI_Datatype t = c.type;
      for (auto& other : cases)
        if (other.type == t) other.type = MPI_DATATYPE_NULL;  // cases share types: free each once
      MPI_Datatype f = t;
      MPI_Type_free(&f);
    }
  MPI_Barrier(MPI_COMM_WORLD);
}
