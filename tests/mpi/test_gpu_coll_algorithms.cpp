// dtmpi's own collective algorithms (src/coll, selected by DTMPI_COLL) on
// device buffers: every collective they serve, blocking and non-blocking,
// with contiguous device buffers, against the system MPI (PMPI_*) doing the
// same call on host copies. The algorithms copy with the CPU through a node
// segment, so the staging layer must hand them host memory -- also where the
// system MPI counts as CUDA-aware (DTMPI_CUDA_AWARE=1 in one CTest entry),
// where contiguous device buffers would otherwise go on unstaged (before the
// fix: a CPU memcpy from cudaMalloc'd memory, a segmentation fault). Each test
// checks that dtmpi's algorithms ran. Skipped without a GPU; run by CTest with
// DTMPI_COLL naming an algorithm for every operation.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "common/dtmpi_stats.hpp"
#include "common/mpi_world.hpp"
#include "dtmpi/dtmpi.h"

namespace {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

// A device vector of doubles with a host mirror.
struct Dev {
  double* p = nullptr;
  size_t n = 0;
  explicit Dev(const std::vector<double>& h) : n(h.size()) {
    EXPECT_EQ(cudaMalloc(&p, (n + 1) * sizeof(double)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, h.data(), n * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cudaFree(p); }
  std::vector<double> get() const {
    std::vector<double> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

std::vector<double> filled(size_t n, int me, int salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = me * 1000 + salt * 10 + static_cast<double>(i % 97);
  return v;
}

uint64_t served() { return dtmpi::testing::stat_value("dtmpi's collective algorithms "); }

// One collective: `call(send, recv, blocking)` on (send, recv), run by dtmpi
// on device copies and by the system MPI on the host vectors; the device
// result must equal the host one. Sizes below and above a scratch slot.
using Call = std::function<int(const double* send, double* recv, int count, MPI_Request* req, bool system)>;

// `blocks`: the send and receive buffers hold that many blocks of `count + 2n`
// doubles (room for the v forms' layouts below).
void check(const char* what, int send_blocks, int recv_blocks, const Call& call) {
  const int me = world_rank(), n = world_size();
  const uint64_t before = served();
  for (int count : {3, 1000, 40000}) {
    for (bool blocking : {true, false}) {
      auto in = filled(static_cast<size_t>(send_blocks * (count + 2 * n)), me, count % 7);
      std::vector<double> want(static_cast<size_t>(recv_blocks * (count + 2 * n)), -1.0);
      Dev din(in), dout(want);
      MPI_Request req = MPI_REQUEST_NULL;
      // EXPECT, not ASSERT: a rank that left the loop early would leave its
      // peers waiting in the next collective
      EXPECT_EQ(call(in.data(), want.data(), count, nullptr, true), MPI_SUCCESS) << what;
      EXPECT_EQ(call(din.p, dout.p, count, blocking ? nullptr : &req, false), MPI_SUCCESS) << what;
      if (!blocking) {
        EXPECT_EQ(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS) << what;
      }
      EXPECT_TRUE(dout.get() == want) << what << ", " << count << " doubles, " << (blocking ? "blocking" : "non-blocking");
    }
  }
  // this operation ran dtmpi's algorithms (on several ranks: one rank's
  // calls may all be the system's)
  if (n > 1) {
    EXPECT_GT(served(), before) << what << ": " << dtmpi_stats();
  }
}

TEST(GpuCollAlgorithms, EveryServedCollectiveOnDeviceBuffers) {
  const int n = world_size();
  const int root = n - 1;
  check("bcast", 1, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    // the root's input is its receive buffer: copied there first
    if (world_rank() == root) {
      if (sys) std::copy(s, s + c, r);
      else cudaMemcpy(r, s, static_cast<size_t>(c) * sizeof(double), cudaMemcpyDeviceToDevice);
    }
    if (sys) return PMPI_Bcast(r, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
    return q ? MPI_Ibcast(r, c, MPI_DOUBLE, root, MPI_COMM_WORLD, q) : MPI_Bcast(r, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
  });
  check("allreduce", 1, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Allreduce(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return q ? MPI_Iallreduce(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, q)
             : MPI_Allreduce(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
  check("reduce", 1, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Reduce(s, r, c, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
    return q ? MPI_Ireduce(s, r, c, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD, q)
             : MPI_Reduce(s, r, c, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
  });
  check("allgather", 1, n, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Allgather(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, MPI_COMM_WORLD);
    return q ? MPI_Iallgather(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, MPI_COMM_WORLD, q)
             : MPI_Allgather(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, MPI_COMM_WORLD);
  });
  check("gather", 1, n, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Gather(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
    return q ? MPI_Igather(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, root, MPI_COMM_WORLD, q)
             : MPI_Gather(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
  });
  check("scatter", n, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Scatter(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
    return q ? MPI_Iscatter(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, root, MPI_COMM_WORLD, q)
             : MPI_Scatter(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, root, MPI_COMM_WORLD);
  });
  check("alltoall", n, n, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Alltoall(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, MPI_COMM_WORLD);
    return q ? MPI_Ialltoall(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, MPI_COMM_WORLD, q)
             : MPI_Alltoall(s, c, MPI_DOUBLE, r, c, MPI_DOUBLE, MPI_COMM_WORLD);
  });
  check("reduce_scatter_block", n, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Reduce_scatter_block(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return q ? MPI_Ireduce_scatter_block(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, q)
             : MPI_Reduce_scatter_block(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
  check("scan", 1, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    if (sys) return PMPI_Scan(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return q ? MPI_Iscan(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, q)
             : MPI_Scan(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
  // the v forms: rank i's block is count + i doubles (blocks of count + 2n
  // doubles apart); the blocking Alltoallv takes dtmpi's point-to-point route
  // on GPU machines (interpose/coll_p2p.cpp), so only its non-blocking form here
  const int me = world_rank();
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  auto v_layout = [&](int c, int plus) {  // `plus`: added to every count
    for (int i = 0; i < n; ++i) {
      counts[static_cast<size_t>(i)] = c + i + plus;
      displs[static_cast<size_t>(i)] = i * (c + 2 * n);
    }
  };
  check("allgatherv", 1, n, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    v_layout(c, 0);
    if (sys) return PMPI_Allgatherv(s, c + me, MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
    return q ? MPI_Iallgatherv(s, c + me, MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD, q)
             : MPI_Allgatherv(s, c + me, MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  });
  check("gatherv", 1, n, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    v_layout(c, 0);
    if (sys) return PMPI_Gatherv(s, c + me, MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, root, MPI_COMM_WORLD);
    return q ? MPI_Igatherv(s, c + me, MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, root, MPI_COMM_WORLD, q)
             : MPI_Gatherv(s, c + me, MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE, root, MPI_COMM_WORLD);
  });
  check("scatterv", n, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    v_layout(c, 0);
    if (sys) return PMPI_Scatterv(s, counts.data(), displs.data(), MPI_DOUBLE, r, c + me, MPI_DOUBLE, root, MPI_COMM_WORLD);
    return q ? MPI_Iscatterv(s, counts.data(), displs.data(), MPI_DOUBLE, r, c + me, MPI_DOUBLE, root, MPI_COMM_WORLD, q)
             : MPI_Scatterv(s, counts.data(), displs.data(), MPI_DOUBLE, r, c + me, MPI_DOUBLE, root, MPI_COMM_WORLD);
  });
  check("ialltoallv", n, n, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    v_layout(c, me);  // the block from rank i to rank j: c + i + j doubles, as both sides count it
    if (sys)
      return PMPI_Alltoallv(s, counts.data(), displs.data(), MPI_DOUBLE, r, counts.data(), displs.data(), MPI_DOUBLE,
                            MPI_COMM_WORLD);
    MPI_Request own = MPI_REQUEST_NULL;
    const int rc = MPI_Ialltoallv(s, counts.data(), displs.data(), MPI_DOUBLE, r, counts.data(), displs.data(),
                                  MPI_DOUBLE, MPI_COMM_WORLD, q ? q : &own);
    return rc != MPI_SUCCESS || q ? rc : MPI_Wait(&own, MPI_STATUS_IGNORE);
  });
  check("reduce_scatter", n, 1, [&](const double* s, double* r, int c, MPI_Request* q, bool sys) {
    std::vector<int> rc(static_cast<size_t>(n), c);
    if (sys) return PMPI_Reduce_scatter(s, r, rc.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return q ? MPI_Ireduce_scatter(s, r, rc.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, q)
             : MPI_Reduce_scatter(s, r, rc.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
}

}  // namespace
