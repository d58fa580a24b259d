// Bad input to dtmpi::stencil is a StencilError with a clear message on
// every rank -- never a hang or a crash: after each case every rank meets the
// others in a barrier (a rank left behind would hang the test, which fails by
// its timeout) and the next case runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dtmpi/stencil.hpp"
#include "runtime/device.hpp"

namespace st = dtmpi::stencil;

namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Runs `body`, which must throw StencilError whose message contains `want`;
// then all ranks agree that every one of them did.
template <class F>
void expect_error_everywhere(F&& body, const std::string& want) {
  std::string what;
  try {
    body();
  } catch (const st::StencilError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find(want), std::string::npos) << "rank " << rank() << " got: '" << what << "'";
  int mine = what.find(want) != std::string::npos ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(all, 1) << "not every rank reported '" << want << "'";
}

bool uneven_nodes() {  // DTMPI_RANKS_PER_NODE that does not divide the ranks
  const char* v = std::getenv("DTMPI_RANKS_PER_NODE");
  return v && std::atoi(v) > 0 && size() % std::atoi(v) != 0;
}

}  // namespace

TEST(StencilErrors, RadiusLargerThanASubdomain) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  // 8 points along x split over the ranks: subdomains of 8/n points, radius 5
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {8 * size(), 4, 4});
        d.set_radius(st::Radius::uniform(1).set(0, 9, 9));
        d.add_quantity<double>("u");
        d.realize();
      },
      "radius 9 along x is larger than the smallest subdomain");
}

TEST(StencilErrors, ExtentThatCannotBeSplit) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {1, 1, 1});
        d.set_subdomains_per_rank(2);
        d.add_quantity<float>("u");
        d.realize();
      },
      "cannot be split");
}

TEST(StencilErrors, MismatchedQuantityTypes) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  if (size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        if (rank() == size() - 1) d.add_quantity<float>("u");
        else d.add_quantity<double>("u");
        d.realize();
      },
      "different configurations");
}

TEST(StencilErrors, MismatchedQuantityCounts) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  if (size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.add_quantity<double>("u");
        if (rank() == 0) d.add_quantity<double>("v");
        d.realize();
      },
      "different configurations");
}

TEST(StencilErrors, MismatchedRadius) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  if (size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.set_radius(rank() == 0 ? 2 : 1);
        d.add_quantity<double>("u");
        d.realize();
      },
      "different configurations");
}

// Configurations too long to send whole still differ where their ends do.
TEST(StencilErrors, MismatchAtTheEndOfALongConfiguration) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  if (size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        for (int q = 0; q < 40; ++q) d.add_quantity<double>(std::string(60, 'a' + q % 26));
        d.add_quantity<double>(rank() == 0 ? "last" : "LAST");
        d.realize();
      },
      "different configurations");
}

// After a refused realize() the domain can be fixed and realized.
TEST(StencilErrors, RealizeAgainAfterAnError) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  st::DistributedDomain d(MPI_COMM_WORLD, {8 * size(), 8, 8});
  d.set_radius(9);
  auto u = d.add_quantity<int>("u");
  expect_error_everywhere([&] { d.realize(); }, "is larger than the smallest subdomain");
  d.set_radius(1);
  d.realize();
  ASSERT_EQ(d.subdomains().size(), 1u);
  for (st::Subdomain& s : d.subdomains()) {
    auto c = s.current(u);
    const st::Box b = s.box();
    for (int64_t z = b.lo.z; z < b.hi.z; ++z)
      for (int64_t y = b.lo.y; y < b.hi.y; ++y)
        for (int64_t x = b.lo.x; x < b.hi.x; ++x) c(x, y, z) = static_cast<int>(x + 100 * y + 10000 * z);
  }
  d.exchange();
  const st::Subdomain& s = d.subdomains().front();
  const int64_t gx = (s.box().lo.x - 1 + 8 * size()) % (8 * size());  // periodic: the -x ghost wraps
  EXPECT_EQ(s.current(u)(s.box().lo.x - 1, 3, 4), static_cast<int>(gx + 100 * 3 + 10000 * 4));
}

TEST(StencilErrors, QuantityRadiusBeyondTheDomains) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.set_radius(1);
        d.add_quantity<double>("u", st::Radius::uniform(1).set(2, 1, 2));
        d.realize();
      },
      "quantity 'u' has radius 1/2 along z, outside 0..1/1");
}

TEST(StencilErrors, NegativeRadiusAndNoQuantity) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.set_radius(-1);
        d.add_quantity<double>("u");
        d.realize();
      },
      "negative radius");
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.realize();
      },
      "no quantity");
}

// set_overlap_blocks_per_sm() takes 0 (a block per tile) to 32, checked by
// realize() on every rank; in range, a host-memory domain ignores it and
// counts its overlapped exchanges.
TEST(StencilErrors, OverlapBlocksOutOfRange) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  for (const int bad : {-1, 33}) {
    expect_error_everywhere(
        [&] {
          st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
          d.add_quantity<double>("u");
          d.set_overlap_blocks_per_sm(bad);
          d.realize();
        },
        "set_overlap_blocks_per_sm(" + std::to_string(bad) + "): 0 (a block per tile) to 32 blocks per SM");
  }
  st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
  d.add_quantity<double>("u");
  d.set_overlap_blocks_per_sm(32).set_overlap_blocks_per_sm(0);
  d.realize();
  expect_error_everywhere([&] { d.set_overlap_blocks_per_sm(1); }, "set_overlap_blocks_per_sm() after realize()");
  d.start_exchange();
  d.finish_exchange();
  EXPECT_EQ(d.stats().overlapped_exchanges, 1);
  d.exchange();
  EXPECT_EQ(d.stats().overlapped_exchanges, 1);
}

TEST(StencilErrors, CallsOutOfOrder) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
  d.add_quantity<double>("u");
  expect_error_everywhere([&] { d.exchange(); }, "exchange before realize()");
  expect_error_everywhere([&] { d.start_exchange(); }, "exchange before realize()");
  expect_error_everywhere([&] { d.finish_exchange(); }, "before realize()");
  expect_error_everywhere([&] { d.swap(); }, "swap() before realize()");
  expect_error_everywhere([&] { (void)d.subdomains(); }, "before realize()");
  d.realize();
  expect_error_everywhere([&] { d.set_radius(2); }, "set_radius() after realize()");
  expect_error_everywhere([&] { d.add_quantity<int>("v"); }, "add_quantity() after realize()");
  expect_error_everywhere([&] { d.realize(); }, "realize() after realize()");
  expect_error_everywhere([&] { d.finish_exchange(); }, "without start_exchange()");
  expect_error_everywhere([&] { d.progress(); }, "progress() without start_exchange()");
  d.start_exchange();
  expect_error_everywhere([&] { d.start_exchange(); }, "while an exchange is in flight");
  expect_error_everywhere([&] { d.swap(); }, "while an exchange is in flight");
  d.finish_exchange();
  d.exchange();  // still usable after the refused calls
}

// Device memory where it cannot be had (a build without CUDA, or no GPU): an
// error on every rank, not a crash. Where a GPU is present this is not the case.
TEST(StencilErrors, DeviceMemoryWithoutAGpu) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  if (dtmpi::runtime::gpu_enabled()) GTEST_SKIP() << "a GPU is present";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.set_memory(st::Memory::kDevice);
        d.add_quantity<double>("u");
        d.realize();
      },
      "dtmpi::stencil: ");
}

// DTMPI_RANKS_PER_NODE=2 with 3 ranks: nodes of 2 and 1 ranks.
TEST(StencilErrors, NodesOfDifferentSizes) {
  if (!uneven_nodes()) GTEST_SKIP() << "needs DTMPI_RANKS_PER_NODE not dividing the ranks";
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.add_quantity<double>("u");
        d.realize();
      },
      "different numbers of ranks");
}

TEST(StencilErrors, PeerPathThatCannotApply) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  // the device path posts device buffers: never on a host domain
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {8, 8, 8 * size()});
        d.set_peer_path(st::PeerPath::kDevice);
        d.add_quantity<double>("u");
        d.realize();
      },
      "set_peer_path(PeerPath::kDevice) on a host-memory domain");
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {8, 8, 8 * size()});
        d.set_memory(st::Memory::kDevice).set_peer_path(st::PeerPath::kHost);
        d.add_quantity<double>("u");
        d.realize();
      },
      "kHost is what stats() says");
  // this test is not linked with libdtmpi (a plain MPI in front): a forced
  // device path is refused before any GPU is touched, so also on machines
  // without one, and kAuto would have taken the staged path
  expect_error_everywhere(
      [] {
        st::DistributedDomain d(MPI_COMM_WORLD, {8, 8, 8 * size()});
        d.set_memory(st::Memory::kDevice).set_peer_path(st::PeerPath::kDevice);
        d.add_quantity<double>("u");
        d.realize();
      },
#ifdef DTMPI_HAVE_CUDA
      "PeerPath::kDevice needs dtmpi as the MPI in front");
#else
      "needs dtmpi built with CUDA");
#endif
  MPI_Barrier(MPI_COMM_WORLD);
}

// The GPU bandwidth matrix of placement: square, positive, the same on every
// rank, device domains only.
TEST(StencilErrors, GpuBandwidthMatrix) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  auto with = [](std::vector<double> bw, st::Memory m) {
    return [bw, m] {
      st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
      d.set_memory(m).set_gpu_bandwidth(bw);
      d.add_quantity<double>("u");
      d.realize();
    };
  };
  expect_error_everywhere(with({1, 2, 3}, st::Memory::kDevice), "m x m matrix");
  expect_error_everywhere(with({1, 0, 1, 1}, st::Memory::kDevice), "finite and > 0");
  expect_error_everywhere(with({1, 1, 1, 1}, st::Memory::kHost), "set_gpu_bandwidth() on a host-memory domain");
  if (size() >= 2)
    expect_error_everywhere(with({rank() == 0 ? 2.0 : 1.0}, st::Memory::kHost), "different configurations");
}

// set_gpus(): per rank, so checked collectively -- on a host-memory domain
// (asked on one rank only), or naming a device a rank does not have, every
// rank fails with the same message naming the rank.
TEST(StencilErrors, GpusPerRank) {
  if (uneven_nodes()) GTEST_SKIP() << "this run is for the node check";
  const int last = size() - 1;
  expect_error_everywhere(
      [last] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        if (rank() == last) d.set_gpus({0});
        d.add_quantity<double>("u");
        d.realize();
      },
      "set_gpus() on a host-memory domain (rank " + std::to_string(last));
  expect_error_everywhere(
      [last] {
        st::DistributedDomain d(MPI_COMM_WORLD, {16, 16, 16});
        d.set_memory(st::Memory::kDevice).set_subdomains_per_rank(2);
        if (rank() == last) d.set_gpus({0, 4096});
        d.add_quantity<double>("u");
        d.realize();
      },
#ifdef DTMPI_HAVE_CUDA
      // without a GPU (CI) the rank's entry 0 is refused too: the first bad slot is named
      "rank " + std::to_string(last) + " has no CUDA device for set_gpus()");
#else
      "needs dtmpi built with CUDA");
#endif
}
