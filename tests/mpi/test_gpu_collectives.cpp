// Collectives on GPU buffers through dtmpi (the system MPI of the test
// machines is not CUDA-aware), against the system MPI doing the same call on
// host copies of the same data (PMPI_*): strided and named types, device to
// device and mixed host/device ends, every root, in place, reductions with
// predefined and user-defined ops, non-blocking forms. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/mpi_world.hpp"
#include "dtmpi/dtmpi.h"

namespace {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

// A device copy of a host vector of doubles.
struct Dev {
  double* p = nullptr;
  size_t n = 0;
  explicit Dev(const std::vector<double>& h) : n(h.size()) {
    cudaMalloc(&p, n * sizeof(double) + 8);
    cudaMemcpy(p, h.data(), n * sizeof(double), cudaMemcpyHostToDevice);
  }
  ~Dev() { cudaFree(p); }
  std::vector<double> get() const {
    std::vector<double> h(n);
    cudaMemcpy(h.data(), p, n * sizeof(double), cudaMemcpyDeviceToHost);
    return h;
  }
};

std::vector<double> filled(size_t n, int me, int salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = me * 1e6 + salt * 1e4 + static_cast<double>(i % 9973);
  return v;
}

struct Strided {  // 2 of every 3 doubles
  MPI_Datatype t = MPI_DATATYPE_NULL, vec = MPI_DATATYPE_NULL;
  Strided() {
    MPI_Type_vector(1, 2, 3, MPI_DOUBLE, &vec);
    MPI_Type_create_resized(vec, 0, 3 * sizeof(double), &t);
    MPI_Type_commit(&t);
  }
  ~Strided() {
    MPI_Type_free(&t);
    MPI_Type_free(&vec);
  }
};

}  // namespace

TEST(GpuCollectives, AlltoallAllgatherGatherScatterBcast) {
  const int me = world_rank(), n = world_size();
  Strided s;
  const int c = 5000;  // elements of 2 doubles per piece
  auto src = filled(static_cast<size_t>(n * c * 3), me, 1);
  Dev dsrc(src);
  {  // alltoall, strided device -> named device
    std::vector<double> want(static_cast<size_t>(n * c * 2), -1);
    Dev d(want);
    ASSERT_EQ(PMPI_Alltoall(src.data(), c, s.t, want.data(), 2 * c, MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Alltoall(dsrc.p, c, s.t, d.p, 2 * c, MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(d.get() == want) << "alltoall";
  }
  {  // allgather, named device -> strided device; then in place
    std::vector<double> want(static_cast<size_t>(n * c * 3), -1);
    Dev d(want);
    ASSERT_EQ(PMPI_Allgather(src.data(), 2 * c, MPI_DOUBLE, want.data(), c, s.t, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allgather(dsrc.p, 2 * c, MPI_DOUBLE, d.p, c, s.t, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(d.get() == want) << "allgather";
    auto inplace = filled(want.size(), me, 2);
    Dev di(inplace);
    ASSERT_EQ(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, inplace.data(), c, s.t, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, di.p, c, s.t, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(di.get() == inplace) << "allgather in place";
  }
  for (int root = 0; root < n; ++root) {
    std::vector<double> want(static_cast<size_t>(n * c * 3), -1), hgot = want;
    Dev d(want);
    // gather: device send, device receive at the root
    ASSERT_EQ(PMPI_Gather(src.data(), c, s.t, want.data(), c, s.t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Gather(dsrc.p, c, s.t, d.p, c, s.t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(d.get() == want) << "gather root " << root;
    // scatter: device root, host receivers
    std::vector<double> swant(static_cast<size_t>(c * 2), -1), sgot = swant;
    ASSERT_EQ(PMPI_Scatter(src.data(), c, s.t, swant.data(), 2 * c, MPI_DOUBLE, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Scatter(dsrc.p, c, s.t, sgot.data(), 2 * c, MPI_DOUBLE, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(sgot == swant) << "scatter root " << root;
    // gatherv with uneven counts
    std::vector<int> cnt(static_cast<size_t>(n)), dsp(static_cast<size_t>(n));
    for (int i = 0, at = 0; i < n; ++i) {
      cnt[static_cast<size_t>(i)] = c / (i + 1);
      dsp[static_cast<size_t>(i)] = at;
      at += cnt[static_cast<size_t>(i)] + 3;
    }
    std::vector<double> vwant(want.size(), -1);
    Dev dv(vwant);
    ASSERT_EQ(PMPI_Gatherv(src.data(), cnt[static_cast<size_t>(me)], s.t, vwant.data(), cnt.data(), dsp.data(), s.t,
                           root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Gatherv(dsrc.p, cnt[static_cast<size_t>(me)], s.t, dv.p, cnt.data(), dsp.data(), s.t, root,
                          MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(dv.get() == vwant) << "gatherv root " << root;
    // bcast: strided device buffers everywhere, then a contiguous 8 MiB one
    auto b = filled(static_cast<size_t>(c * 3), me, 3);
    Dev db(b);
    ASSERT_EQ(PMPI_Bcast(b.data(), c, s.t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Bcast(db.p, c, s.t, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(db.get() == b) << "bcast root " << root;
    auto big = filled(size_t{1} << 20, me, 4);
    Dev dbig(big);
    ASSERT_EQ(PMPI_Bcast(big.data(), 1 << 20, MPI_DOUBLE, root, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Bcast(dbig.p, 1 << 20, MPI_DOUBLE, root, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(dbig.get() == big) << "bcast 8 MiB root " << root;
  }
}

TEST(GpuCollectives, NeighborFormsOnDeviceBuffers) {
  const int me = world_rank(), n = world_size();
  Strided s;
  MPI_Comm ring = dtmpi::testing::ring_graph();
  ASSERT_NE(ring, MPI_COMM_NULL);
  auto src = filled(30000, me, 5);
  Dev dsrc(src);
  std::vector<double> want(30000, -1);
  Dev d(want);
  ASSERT_EQ(PMPI_Neighbor_alltoall(src.data(), 4000, s.t, want.data(), 4000, s.t, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_alltoall(dsrc.p, 4000, s.t, d.p, 4000, s.t, ring), MPI_SUCCESS);
  EXPECT_TRUE(d.get() == want) << "neighbor_alltoall";
  std::vector<double> gwant(30000, -1);
  Dev dg(gwant);
  ASSERT_EQ(PMPI_Neighbor_allgather(src.data(), 3000, s.t, gwant.data(), 6000, MPI_DOUBLE, ring), MPI_SUCCESS);
  ASSERT_EQ(MPI_Neighbor_allgather(dsrc.p, 3000, s.t, dg.p, 6000, MPI_DOUBLE, ring), MPI_SUCCESS);
  EXPECT_TRUE(dg.get() == gwant) << "neighbor_allgather";
  const MPI_Aint sd[2] = {0, 8 * 4000}, rd[2] = {8 * 100, 8 * 5000};
  std::vector<double> wwant(30000, -1);
  Dev dw(wwant);
  // with 2 ranks both neighbours are one process: counts pair up as (left, right)
  if (n == 2) {
    const int sc_[2] = {1000, 2000}, rc_[2] = {2000, 1000};
    const MPI_Datatype st_[2] = {s.t, MPI_DOUBLE}, rt_[2] = {MPI_DOUBLE, s.t};
    ASSERT_EQ(PMPI_Neighbor_alltoallw(src.data(), sc_, sd, st_, wwant.data(), rc_, rd, rt_, ring), MPI_SUCCESS);
    ASSERT_EQ(MPI_Neighbor_alltoallw(dsrc.p, sc_, sd, st_, dw.p, rc_, rd, rt_, ring), MPI_SUCCESS);
    EXPECT_TRUE(dw.get() == wwant) << "neighbor_alltoallw";
  }
  MPI_Comm_free(&ring);
}

// Pieces of 512 bytes and more are read by the receiver where they lie in the
// sender's GPU memory (transport::send_in_place): slices of dtmpi's batched
// pack, of contiguous pieces (the halo's pack + neighbor_alltoallv) and of
// strided ones (alltoallw), next to a piece too small for it and one of zero.
TEST(GpuCollectives, LargePiecesReadInPlace) {
  const int me = world_rank(), n = world_size();
  Strided s;
  MPI_Comm ring = dtmpi::testing::ring_graph();
  ASSERT_NE(ring, MPI_COMM_NULL);
  for (int round = 0; round < 3; ++round) {  // later rounds reuse the IPC mappings
    // small: below transport::kInPlaceMin (320 B: the one-message path) or above it
    const int big = 20000 + 1000 * round, small = round == 1 ? 500 : 40;
    auto src = filled(static_cast<size_t>(3 * big + 100), me, 7 + round);
    Dev dsrc(src);
    // with 2 ranks both neighbours are one process: the k-th message pairs with
    // the k-th receive, so piece k has the same size on both sides
    {  // neighbor_alltoallv of contiguous doubles: a large piece and a small one
      const int sc[2] = {big, small}, sdsp[2] = {7, big + 50};
      const int rc[2] = {big, small}, rdsp[2] = {3, big + 20};
      std::vector<double> want(static_cast<size_t>(big + small + 40), -1);
      Dev d(want);
      ASSERT_EQ(PMPI_Neighbor_alltoallv(src.data(), sc, sdsp, MPI_DOUBLE, want.data(), rc, rdsp, MPI_DOUBLE, ring),
                MPI_SUCCESS);
      ASSERT_EQ(MPI_Neighbor_alltoallv(dsrc.p, sc, sdsp, MPI_DOUBLE, d.p, rc, rdsp, MPI_DOUBLE, ring), MPI_SUCCESS);
      EXPECT_TRUE(d.get() == want) << "neighbor_alltoallv round " << round;
    }
    if (n == 2) {  // alltoallw of strided pieces (packed once, slices read in place), one piece empty
      const int sc[2] = {big / 2, 0}, rc[2] = {big, 0};
      const MPI_Aint sd[2] = {0, 0}, rd[2] = {8 * 64, 0};
      const MPI_Datatype st[2] = {s.t, MPI_DOUBLE}, rt[2] = {MPI_DOUBLE, s.t};
      std::vector<double> want(static_cast<size_t>(3 * big), -1);
      Dev d(want);
      ASSERT_EQ(PMPI_Neighbor_alltoallw(src.data(), sc, sd, st, want.data(), rc, rd, rt, ring), MPI_SUCCESS);
      ASSERT_EQ(MPI_Neighbor_alltoallw(dsrc.p, sc, sd, st, d.p, rc, rd, rt, ring), MPI_SUCCESS);
      EXPECT_TRUE(d.get() == want) << "neighbor_alltoallw round " << round;
    }
    {  // alltoallv of contiguous pieces to every rank, itself included
      std::vector<int> cnt(static_cast<size_t>(n), big / n), dsp(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) dsp[static_cast<size_t>(i)] = i * (big / n + 5);
      std::vector<double> want(static_cast<size_t>(n * (big / n + 5)), -1);
      Dev d(want);
      ASSERT_EQ(PMPI_Alltoallv(src.data(), cnt.data(), dsp.data(), MPI_DOUBLE, want.data(), cnt.data(), dsp.data(),
                               MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Alltoallv(dsrc.p, cnt.data(), dsp.data(), MPI_DOUBLE, d.p, cnt.data(), dsp.data(), MPI_DOUBLE,
                              MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_TRUE(d.get() == want) << "alltoallv round " << round;
    }
  }
  MPI_Comm_free(&ring);
  // the path under test was taken (dtmpi_stats: "multi-message sends N (M in place)")
  const std::string stats = dtmpi_stats();
  const size_t end = stats.find(" in place)"), open = stats.rfind('(', end);
  ASSERT_NE(end, std::string::npos) << stats;
  if (!std::getenv("DTMPI_METHOD")) {
    EXPECT_GT(std::atol(stats.substr(open + 1, end - open - 1).c_str()), 0) << stats;
  }
  // each rank's alltoallv piece to itself was unpacked from its packed bytes
  // without a message (exchange_with_itself)
  EXPECT_GE(dtmpi::testing::stat_value("pieces to itself "), 3u) << stats;
}

namespace {
void absmax(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<double*>(in);
  auto* b = static_cast<double*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = std::max(std::abs(a[i]), std::abs(b[i]));
}
}  // namespace

TEST(GpuCollectives, ReductionsOnDeviceBuffers) {
  const int me = world_rank(), n = world_size();
  const int c = 100000;
  auto src = filled(static_cast<size_t>(n * c), me, 6);
  for (size_t i = 0; i < src.size(); i += 7) src[i] = -src[i];
  Dev dsrc(src);
  MPI_Op user;
  MPI_Op_create(absmax, 1, &user);
  for (MPI_Op op : {MPI_SUM, MPI_MAX, user}) {
    std::vector<double> want(static_cast<size_t>(c), -1);
    Dev d(want);
    ASSERT_EQ(PMPI_Allreduce(src.data(), want.data(), c, MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allreduce(dsrc.p, d.p, c, MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(d.get() == want) << "allreduce";
    auto inplace = src;
    Dev di(inplace);
    ASSERT_EQ(PMPI_Allreduce(MPI_IN_PLACE, inplace.data(), c, MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, di.p, c, MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(di.get() == inplace) << "allreduce in place";
    for (int root = 0; root < n; ++root) {
      std::vector<double> rw(static_cast<size_t>(c), -1);
      Dev dr(rw);
      ASSERT_EQ(PMPI_Reduce(src.data(), rw.data(), c, MPI_DOUBLE, op, root, MPI_COMM_WORLD), MPI_SUCCESS);
      ASSERT_EQ(MPI_Reduce(dsrc.p, dr.p, c, MPI_DOUBLE, op, root, MPI_COMM_WORLD), MPI_SUCCESS);
      EXPECT_TRUE(dr.get() == rw) << "reduce root " << root;
    }
    std::vector<double> sw(static_cast<size_t>(c), -1);
    Dev ds(sw);
    ASSERT_EQ(PMPI_Reduce_scatter_block(src.data(), sw.data(), c, MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_scatter_block(dsrc.p, ds.p, c, MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(ds.get() == sw) << "reduce_scatter_block";
    std::vector<int> counts(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) counts[static_cast<size_t>(i)] = c / (i + 1);
    std::vector<double> vw(static_cast<size_t>(c), -1);
    Dev dv(vw);
    ASSERT_EQ(PMPI_Reduce_scatter(src.data(), vw.data(), counts.data(), MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_scatter(dsrc.p, dv.p, counts.data(), MPI_DOUBLE, op, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_TRUE(dv.get() == vw) << "reduce_scatter";
    auto local = src;
    Dev dl(local);
    ASSERT_EQ(PMPI_Reduce_local(src.data() + c, local.data(), c, MPI_DOUBLE, op), MPI_SUCCESS);
    ASSERT_EQ(MPI_Reduce_local(dsrc.p + c, dl.p, c, MPI_DOUBLE, op), MPI_SUCCESS);
    EXPECT_TRUE(dl.get() == local) << "reduce_local";
    for (bool exclusive : {false, true}) {
      std::vector<double> pw(static_cast<size_t>(c), -1);
      Dev dp(pw);
      ASSERT_EQ((exclusive ? PMPI_Exscan : PMPI_Scan)(src.data(), pw.data(), c, MPI_DOUBLE, op, MPI_COMM_WORLD),
                MPI_SUCCESS);
      MPI_Request r;
      ASSERT_EQ((exclusive ? MPI_Iexscan : MPI_Iscan)(dsrc.p, dp.p, c, MPI_DOUBLE, op, MPI_COMM_WORLD, &r),
                MPI_SUCCESS);
      ASSERT_EQ(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
      if (!exclusive || me > 0) {  // Exscan leaves rank 0's result undefined
        EXPECT_TRUE(dp.get() == pw) << (exclusive ? "iexscan" : "iscan");
      }
    }
  }
  // integers, MPI_BAND, device send buffer and host result; the buffer is
  // written by a small pageable cudaMemcpy, which may return before the data
  // is on the device: dtmpi must wait for it (DTMPI_GPU_ORDER=legacy, the default)
  std::vector<int> iv(1000), iw(1000), ig(1000);
  for (int i = 0; i < 1000; ++i) iv[static_cast<size_t>(i)] = (i * 2654435761u) ^ me;
  int* di = nullptr;
  cudaMalloc(&di, iv.size() * sizeof(int));
  cudaMemcpy(di, iv.data(), iv.size() * sizeof(int), cudaMemcpyHostToDevice);
  ASSERT_EQ(PMPI_Allreduce(iv.data(), iw.data(), 1000, MPI_INT, MPI_BAND, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Allreduce(di, ig.data(), 1000, MPI_INT, MPI_BAND, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(ig, iw);
  cudaFree(di);
  MPI_Op_free(&user);
}

TEST(GpuCollectives, NonBlockingOnDeviceBuffers) {
  const int me = world_rank(), n = world_size();
  Strided s;
  const int c = 3000;
  auto src = filled(static_cast<size_t>(n * c * 3), me, 7);
  Dev dsrc(src);
  std::vector<double> w1(static_cast<size_t>(n * c * 3), -1), w2(static_cast<size_t>(c * 3), -1);
  auto w3 = filled(static_cast<size_t>(c * 3), me, 8);
  Dev d1(w1), d2(w2), d3(w3);
  std::vector<int> cnt(static_cast<size_t>(n), c), dsp(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) dsp[static_cast<size_t>(i)] = c * i;
  ASSERT_EQ(PMPI_Alltoallv(src.data(), cnt.data(), dsp.data(), s.t, w1.data(), cnt.data(), dsp.data(), s.t,
                           MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Allreduce(src.data(), w2.data(), c * 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(PMPI_Bcast(w3.data(), c, s.t, n - 1, MPI_COMM_WORLD), MPI_SUCCESS);
  MPI_Request r[3];
  ASSERT_EQ(MPI_Ialltoallv(dsrc.p, cnt.data(), dsp.data(), s.t, d1.p, cnt.data(), dsp.data(), s.t, MPI_COMM_WORLD,
                           &r[0]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Iallreduce(dsrc.p, d2.p, c * 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Ibcast(d3.p, c, s.t, n - 1, MPI_COMM_WORLD, &r[2]), MPI_SUCCESS);
  ASSERT_EQ(MPI_Waitall(3, r, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  EXPECT_TRUE(d1.get() == w1) << "ialltoallv";
  EXPECT_TRUE(d2.get() == w2) << "iallreduce";
  EXPECT_TRUE(d3.get() == w3) << "ibcast";
}
