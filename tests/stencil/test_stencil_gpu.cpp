// Device-memory domains (GPU label; CTest reports them skipped without a GPU,
// tests/common/gpu_gtest_main.cpp): the host tests' checks by global
// coordinate, with every allocation moved by cudaMemcpy -- one rank with
// several subdomains on its GPU (same-GPU directions: one kernel, no buffer),
// ranks sharing a GPU, and ranks exchanging through pinned host messages.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "stencil/stencil_check.hpp"

namespace st = dtmpi::stencil;
using stencil_check::Odd3;
using stencil_check::Wide16;

namespace {

const stencil_check::Upload kUpload = [](const st::Subdomain& s, int q, const std::vector<unsigned char>& img) {
  ASSERT_EQ(cudaMemcpy(s.current_data(q), img.data(), img.size(), cudaMemcpyHostToDevice), cudaSuccess);
};
const stencil_check::Download kDownload = [](const st::Subdomain& s, int q, size_t bytes) {
  std::vector<unsigned char> img(bytes);
  EXPECT_EQ(cudaMemcpy(img.data(), s.current_data(q), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return img;
};

struct Case {
  const char* name;
  st::Dim3 extent;
  st::Radius radius;
  std::array<bool, 3> periodic;
  int per_rank;
};

}  // namespace

class StencilGpuExchange : public ::testing::TestWithParam<int> {};

TEST_P(StencilGpuExchange, EveryGhostByGlobalCoordinate) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  const std::vector<Case> cases = {
      {"radius1_periodic", {24, 20, 18}, st::Radius::uniform(1), {true, true, true}, 1},
      {"radius3_periodic_3_per_rank", {40, 30, 28}, st::Radius::uniform(3), {true, true, true}, 3},
      {"radius2_open_2_per_rank", {26, 22, 20}, st::Radius::uniform(2), {false, false, false}, 2},
      {"per_side_mixed", {33, 25, 21}, st::Radius{}.set(0, 2, 1).set(1, 0, 1).set(2, 3, 3), {true, false, true}, 2},
  };
  const Case c = cases[static_cast<size_t>(GetParam())];
  SCOPED_TRACE(c.name);
  st::DistributedDomain d(MPI_COMM_WORLD, c.extent);
  d.set_radius(c.radius).set_periodic(c.periodic[0], c.periodic[1], c.periodic[2]).set_subdomains_per_rank(c.per_rank);
  d.set_memory(st::Memory::kDevice);
  for (int q = 0; q < 8; ++q) d.add_quantity<double>("d" + std::to_string(q));
  d.add_quantity<Odd3>("odd");
  d.add_quantity<Wide16>("wide");
  d.add_quantity<int16_t>("short");
  d.add_quantity<float>("near", st::Radius{}.set(0, 1, 0).set(1, 0, 0).set(2, 0, 1));  // reaches less far
  std::vector<size_t> esize(8, 8);
  esize.insert(esize.end(), {3, 16, 2, 4});
  std::vector<st::Radius> reach(esize.size(), c.radius);
  reach.back() = st::Radius{}.set(0, std::min(1, c.radius.low(0)), 0).set(1, 0, 0).set(2, 0, std::min(1, c.radius.high(2)));
  d.realize();
  for (const st::Subdomain& s : d.subdomains()) {
    EXPECT_GE(s.device(), 0);
    EXPECT_EQ(s.pitch(0) % 512, 0);
  }
  stencil_check::fill(d, esize, 0, kUpload);
  d.exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 0, c.periodic, kDownload, reach), 0);
  d.swap();
  stencil_check::fill(d, esize, 1, kUpload);
  d.start_exchange();
  d.finish_exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 1, c.periodic, kDownload, reach), 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, StencilGpuExchange, ::testing::Range(0, 4));
