// Device-memory domains (GPU label; CTest reports them skipped without a GPU,
// tests/common/gpu_gtest_main.cpp): the host tests' checks by global
// coordinate, with every allocation moved by cudaMemcpy -- one rank with
// several subdomains on its GPU (same-GPU directions: one kernel, no buffer),
// ranks sharing a GPU, and ranks exchanging messages by both peer paths: the
// staged one (pinned host messages) and the device one (packed device
// buffers handed to dtmpi's MPI_Isend/MPI_Irecv, CUDA IPC between the ranks).
// Linked before -lmpi (dtmpi in front), so kAuto takes the device path --
// except in the DTMPI_DISABLE=1 run, where kAuto must stage and a forced
// device path must be refused on every rank.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "dtmpi/dtmpi.h"

#include "runtime/device.hpp"
#include "runtime/peer_bandwidth.hpp"
#include "stencil/domain_impl.hpp"
#include "stencil/gpu_busy.hpp"
#include "stencil/stencil_check.hpp"

namespace st = dtmpi::stencil;
using stencil_check::Odd3;
using stencil_check::Wide16;

namespace {

const stencil_check::Upload kUpload = [](const st::Subdomain& s, int q, const std::vector<unsigned char>& img) {
  ASSERT_EQ(cudaMemcpy(s.current_data(q), img.data(), img.size(), cudaMemcpyHostToDevice), cudaSuccess);
  // a copy from pageable memory may return before the device buffer is
  // written, and the exchange's packs run on a non-blocking stream (of the
  // subdomain's GPU, which set_gpus() may have made another than the current)
  int current = 0;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(s.device()), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(current), cudaSuccess);
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

// dtmpi is in front of this test unless the run disables it (independent of
// the library's own detection, which the test checks against it)
bool expect_front() {
  const char* v = std::getenv("DTMPI_DISABLE");
  return !(v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "on") == 0 || std::strcmp(v, "true") == 0 ||
                 std::strcmp(v, "yes") == 0));
}

const st::PeerPath kPaths[] = {st::PeerPath::kStaged, st::PeerPath::kDevice, st::PeerPath::kAuto};

}  // namespace

// First in the file: before any test has used a second GPU in this process.
// The node's GPU links as realize() measures them: every ordered pair of the
// GPUs timed, positive GB/s, and a GPU whose context the measurement had to
// create released after it -- it must not keep hundreds of MiB of a GPU the
// rank does not use.
TEST(StencilGpuBandwidth, MeasuredBetweenEveryPairAndContextsHandedBack) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  int current = 0;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  std::vector<int> list{current};
  for (int g = 0; g < devices && list.size() < 4; ++g)
    if (g != current) list.push_back(g);
  std::vector<bool> active_before;
  for (int g : list) active_before.push_back(dtmpi::runtime::primary_context_active(g));
  auto bw = dtmpi::runtime::measure_peer_bandwidth(list);
  ASSERT_TRUE(bw.ok()) << bw.error().what;
  ASSERT_EQ(bw.value().size(), list.size() * list.size());
  for (double b : bw.value()) {
    EXPECT_GT(b, 1.0);     // GB/s: a copy slower than 1 GB/s between or within GPUs is no measurement
    EXPECT_LT(b, 1.0e5);
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!active_before[i]) {
      EXPECT_FALSE(dtmpi::runtime::primary_context_active(list[i])) << "GPU " << list[i];
    }
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, current);
}

TEST(StencilGpuPeerPath, DtmpiInFrontAsTheRunSays) {
  EXPECT_EQ(dtmpi_initialized(), expect_front() ? 1 : 0);
}

// (case, peer path, CUDA graphs): with graphs, the third exchange replays
// what the first recorded (swap() parity 0 again), the second its own
class StencilGpuExchange : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(StencilGpuExchange, EveryGhostByGlobalCoordinate) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  const std::vector<Case> cases = {
      {"radius1_periodic", {24, 20, 18}, st::Radius::uniform(1), {true, true, true}, 1},
      {"radius3_periodic_3_per_rank", {40, 30, 28}, st::Radius::uniform(3), {true, true, true}, 3},
      {"radius2_open_2_per_rank", {26, 22, 20}, st::Radius::uniform(2), {false, false, false}, 2},
      {"per_side_mixed", {33, 25, 21}, st::Radius{}.set(0, 2, 1).set(1, 0, 1).set(2, 3, 3), {true, false, true}, 2},
  };
  const Case c = cases[static_cast<size_t>(std::get<0>(GetParam()))];
  const st::PeerPath path = kPaths[std::get<1>(GetParam())];
  const bool graphs = std::get<2>(GetParam());
  SCOPED_TRACE(std::string(c.name) + ", peer path " + st::to_string(path) + (graphs ? ", CUDA graphs" : ""));
  st::DistributedDomain d(MPI_COMM_WORLD, c.extent);
  d.set_radius(c.radius).set_periodic(c.periodic[0], c.periodic[1], c.periodic[2]).set_subdomains_per_rank(c.per_rank);
  d.set_memory(st::Memory::kDevice).set_peer_path(path).set_cuda_graphs(graphs);
  for (int q = 0; q < 8; ++q) d.add_quantity<double>("d" + std::to_string(q));
  d.add_quantity<Odd3>("odd");
  d.add_quantity<Wide16>("wide");
  d.add_quantity<int16_t>("short");
  d.add_quantity<float>("near", st::Radius{}.set(0, 1, 0).set(1, 0, 0).set(2, 0, 1));  // reaches less far
  std::vector<size_t> esize(8, 8);
  esize.insert(esize.end(), {3, 16, 2, 4});
  std::vector<st::Radius> reach(esize.size(), c.radius);
  reach.back() = st::Radius{}.set(0, std::min(1, c.radius.low(0)), 0).set(1, 0, 0).set(2, 0, std::min(1, c.radius.high(2)));
  const bool front = expect_front();
  if (path == st::PeerPath::kDevice && !front) {  // never a device pointer to a plain MPI
    EXPECT_THROW(d.realize(), st::StencilError);
    return;
  }
  d.realize();
  const st::PeerPath used = path == st::PeerPath::kAuto ? (front ? st::PeerPath::kDevice : st::PeerPath::kStaged) : path;
  EXPECT_EQ(d.stats().peer_path, used);
  EXPECT_EQ(d.cuda_graphs(), graphs);
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
  d.swap();
  stencil_check::fill(d, esize, 2, kUpload);
  d.exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 2, c.periodic, kDownload, reach), 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, StencilGpuExchange,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Range(0, 3), ::testing::Bool()));

// Placement with a GPU bandwidth matrix (by device ordinal; every rank of
// this test is on the device current at start, 0): realize() gathers the
// ranks' GPUs, places the node's subdomains, and the exchange still fills
// every ghost. A matrix that does not name a rank's GPU is refused.
TEST(StencilGpuPlacement, BandwidthMatrixByDeviceOrdinal) {
  int device = 0, devices = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  std::vector<double> bw(static_cast<size_t>(devices * devices), 50);
  for (int g = 0; g < devices; ++g) bw[static_cast<size_t>(g * devices + g)] = 900;
  st::DistributedDomain d(MPI_COMM_WORLD, {24, 20, 18});
  d.set_radius(1).set_subdomains_per_rank(2).set_memory(st::Memory::kDevice).set_gpu_bandwidth(bw);
  d.add_quantity<double>("u");
  d.add_quantity<float>("v");
  d.realize();
  const std::string text = d.describe();
  EXPECT_NE(text.find("placement (subdomain:rank of the node)"), std::string::npos) << text;
  const std::vector<size_t> esize{8, 4};
  stencil_check::fill(d, esize, 0, kUpload);
  d.exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 0, {true, true, true}, kDownload), 0);
  // a rank on GPU 1 with a 1x1 matrix: refused on every rank, before
  // anything is allocated (needs 2 GPUs; the decision is the same everywhere)
  int fewest = 0;
  MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest < 2) return;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == size - 1) {
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  }
  std::string what;
  try {
    st::DistributedDomain bad(MPI_COMM_WORLD, {24, 20, 18});
    bad.set_subdomains_per_rank(2).set_memory(st::Memory::kDevice).set_gpu_bandwidth({100});
    bad.add_quantity<double>("u");
    bad.realize();
  } catch (const st::StencilError& e) {
    what = e.what();
  }
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  EXPECT_NE(what.find("outside the 1x1 bandwidth matrix"), std::string::npos) << what;
}

// Several GPUs per rank (set_gpus): each rank's slots spread over the GPUs it
// names, subdomains of one rank on different GPUs exchanging by kernels over
// peer access -- or, without peer access or with DTMPI_STENCIL_PEER_ACCESS=0
// (test_stencil_gpu_peer_copies_np2), by copies between the GPUs -- peers'
// buffers on the home GPU; every ghost by global coordinate, both peer paths,
// graphs refused. With one GPU the list names it twice (one device, the
// single-GPU path); with two or more every GPU gets subdomains and the node's
// GPU links are measured for the placement.
TEST(StencilGpuSeveral, SubdomainsSpreadOverTheRanksGpus) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  int current = 0;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  std::vector<int> gpus{current};
  for (int g = 0; g < devices && gpus.size() < 4; ++g)
    if (g != current) gpus.push_back(g);
  if (gpus.size() == 1) gpus.push_back(current);
  const int per_rank = 2 * static_cast<int>(gpus.size());
  for (st::PeerPath path : {st::PeerPath::kStaged, st::PeerPath::kAuto}) {
    SCOPED_TRACE(std::string("peer path ") + st::to_string(path));
    st::DistributedDomain d(MPI_COMM_WORLD, {40, 28, 26});
    d.set_radius(st::Radius{}.set(0, 2, 1).set(1, 1, 2).set(2, 3, 3)).set_subdomains_per_rank(per_rank);
    d.set_memory(st::Memory::kDevice).set_peer_path(path).set_gpus(gpus).set_cuda_graphs(true);
    for (int q = 0; q < 3; ++q) d.add_quantity<double>("d" + std::to_string(q));
    d.add_quantity<Odd3>("odd");
    d.add_quantity<int16_t>("short");
    const std::vector<size_t> esize{8, 8, 8, 3, 2};
    if (path == st::PeerPath::kAuto && !expect_front()) continue;  // the staged round covers it
    d.realize();
    std::vector<int> used;
    for (const st::Subdomain& s : d.subdomains()) {
      ASSERT_NE(std::find(gpus.begin(), gpus.end(), s.device()), gpus.end());
      cudaPointerAttributes attr{};
      ASSERT_EQ(cudaPointerGetAttributes(&attr, s.current_data(0)), cudaSuccess);
      EXPECT_EQ(attr.device, s.device());  // allocated on the GPU it says
      if (std::find(used.begin(), used.end(), s.device()) == used.end()) used.push_back(s.device());
    }
    std::vector<int> distinct;
    for (int g : gpus)
      if (std::find(distinct.begin(), distinct.end(), g) == distinct.end()) distinct.push_back(g);
    EXPECT_EQ(used.size(), distinct.size());  // every GPU of the list holds subdomains
    EXPECT_EQ(d.cuda_graphs(), distinct.size() == 1);
    bool reach = true;
    for (int a : distinct)
      for (int b : distinct) {
        int can = 1;
        if (a != b) {
          ASSERT_EQ(cudaDeviceCanAccessPeer(&can, a, b), cudaSuccess);
        }
        reach = reach && can;
      }
    const char* access = std::getenv("DTMPI_STENCIL_PEER_ACCESS");
    const bool forced_off = access && (std::string(access) == "0" || std::string(access) == "off");
    EXPECT_EQ(d.stats().gpu_peer_copies, distinct.size() > 1 && (forced_off || !reach));
    const std::string text = d.describe();
    EXPECT_EQ(text.find("GPU links measured") != std::string::npos, distinct.size() > 1) << text;
    for (int round = 0; round < 3; ++round) {
      stencil_check::fill(d, esize, round, kUpload);
      if (round == 1) {
        d.start_exchange();
        d.finish_exchange();
      } else {
        d.exchange();
      }
      EXPECT_EQ(stencil_check::verify(d, esize, round, {true, true, true}, kDownload), 0) << "round " << round;
      int after = -1;
      ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
      EXPECT_EQ(after, current);  // the exchange leaves the caller's device current
      d.swap();
    }
  }
}

// Tall regions of many quantities (5500 planes along z x 13 quantities, one
// of 3-byte points): one launch per kind moves them all (device_kernels.cu:
// more blocks than an earlier per-region grid could hold, pieces of 16-, 8-
// and 1-byte words side by side), every ghost right.
TEST(StencilGpuKernels, TallRegionsOfManyQuantitiesInOneLaunch) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // the partition splits the longest axis: z, 5500 planes to each rank
  st::DistributedDomain d(MPI_COMM_WORLD, {6, 5, 5500 * static_cast<int64_t>(size)});
  d.set_radius(1).set_memory(st::Memory::kDevice).set_peer_path(st::PeerPath::kStaged).set_cuda_graphs(false);
  for (int q = 0; q < 12; ++q) d.add_quantity<double>("d" + std::to_string(q));
  d.add_quantity<Odd3>("odd");
  std::vector<size_t> esize(12, 8);
  esize.push_back(3);
  d.realize();
  ASSERT_GT(d.subdomains().front().box().size().z * 13, 65535);
  stencil_check::fill(d, esize, 0, kUpload);
  d.exchange();
  EXPECT_EQ(stencil_check::verify(d, esize, 0, {true, true, true}, kDownload), 0);
}

// Overlapped exchanges (start_exchange() .. finish_exchange()) launch their
// same-GPU copies and their unpacks on a narrow grid (set_overlap_blocks_per_sm(),
// each block moving tile after tile) or on the full grid (0), with and
// without CUDA graphs (the narrow launches recorded apart from exchange()'s
// full ones): every ghost right on both swap() parities, overlapped rounds
// alternating with blocking ones; the peers' unpacks run narrow too where
// there are several ranks.
TEST(StencilGpuOverlap, NarrowAndFullGridsFillEveryGhost) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  for (const int blocks : {0, 1, 3}) {
    for (const bool graphs : {false, true}) {
      SCOPED_TRACE(std::to_string(blocks) + " blocks per SM" + (graphs ? ", CUDA graphs" : ""));
      st::DistributedDomain d(MPI_COMM_WORLD, {40, 30, 28});
      d.set_radius(st::Radius{}.set(0, 3, 2).set(1, 1, 2).set(2, 3, 3)).set_subdomains_per_rank(3);
      d.set_memory(st::Memory::kDevice).set_overlap_blocks_per_sm(blocks).set_cuda_graphs(graphs);
      for (int q = 0; q < 3; ++q) d.add_quantity<double>("d" + std::to_string(q));
      d.add_quantity<Odd3>("odd");
      d.add_quantity<Wide16>("wide");
      const std::vector<size_t> esize{8, 8, 8, 3, 16};
      d.realize();
      ASSERT_GT(d.stats().local_copies, 0);
      EXPECT_EQ(d.stats().overlap_blocks_per_sm, blocks);
      for (int round = 0; round < 6; ++round) {
        stencil_check::fill(d, esize, round, kUpload);
        if (round % 3 == 2) {
          d.exchange();
        } else {
          d.start_exchange();
          d.finish_exchange();
        }
        EXPECT_EQ(stencil_check::verify(d, esize, round, {true, true, true}, kDownload), 0) << "round " << round;
        d.swap();
      }
      EXPECT_EQ(d.stats().overlapped_exchanges, 4);
    }
  }
}

// Deferred sends: an overlapped exchange on one GPU (device path) queues its
// packs and returns; the sends go out once the packs are done. Here a kernel of the
// program holds every SM for 40 ms from just before start_exchange(), so
// the packs cannot have run when it returns: a send posted then would carry
// the previous round's bytes (each round fills other values). Both peer
// paths, graphs on and off, finish_exchange() directly and after a
// progress() loop (which must see the sends out and the messages in).
TEST(StencilGpuOverlap, SendsWaitForPacksBehindTheProgramsKernel) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  cudaStream_t program = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&program, cudaStreamNonBlocking), cudaSuccess);
  std::vector<st::PeerPath> paths{st::PeerPath::kStaged};
  if (expect_front()) paths.push_back(st::PeerPath::kDevice);
  for (const st::PeerPath path : paths) {
    for (const bool graphs : {false, true}) {
      SCOPED_TRACE(std::string("peer path ") + st::to_string(path) + (graphs ? ", CUDA graphs" : ""));
      st::DistributedDomain d(MPI_COMM_WORLD, {12 * size, 14, 10});
      d.set_radius(2).set_memory(st::Memory::kDevice).set_peer_path(path).set_cuda_graphs(graphs);
      d.add_quantity<double>("u");
      d.add_quantity<Odd3>("odd");
      const std::vector<size_t> esize{8, 3};
      d.realize();
      const bool peers = d.stats().peers > 0;
      for (int round = 0; round < 4; ++round) {
        stencil_check::fill(d, esize, round, kUpload);
        ASSERT_EQ(stencil_check::occupy_gpu(40, program), 0);
        d.start_exchange();
        if (round % 2 == 1)
          while (!d.progress()) {
          }
        d.finish_exchange();
        EXPECT_EQ(stencil_check::verify(d, esize, round, {true, true, true}, kDownload), 0) << "round " << round;
        d.swap();
      }
      EXPECT_EQ(d.stats().overlapped_exchanges, 4);
      // the staged path posts its sends at once, after the packs (exchange.cpp)
      EXPECT_EQ(d.stats().deferred_sends, peers && path == st::PeerPath::kDevice ? 4 : 0);
      ASSERT_EQ(cudaStreamSynchronize(program), cudaSuccess);
    }
  }
  cudaStreamDestroy(program);
}

// progress() of a rank that only sends (data flows one way: +x ghosts only,
// x not periodic, so the last rank along x receives nothing): with its packs
// held behind the program's kernel its messages are not out yet, so
// progress() must answer false although it has no receive to wait for --
// the tests above cannot see that (every rank there receives). Device path
// only (the deferred sends are its).
TEST(StencilGpuOverlap, ProgressOfASendOnlyRankWaitsForItsDeferredSends) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  if (!expect_front()) GTEST_SKIP() << "deferred sends are the device path's: dtmpi is not in front";
  int size = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (size < 2) GTEST_SKIP() << "one rank: no messages";
  cudaStream_t program = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&program, cudaStreamNonBlocking), cudaSuccess);
  {
    st::DistributedDomain d(MPI_COMM_WORLD, {8 * size, 6, 6});
    const st::Radius reach = st::Radius::uniform(0).set(0, 0, 2);
    d.set_radius(reach).set_periodic(false, true, true).set_memory(st::Memory::kDevice);
    d.set_peer_path(st::PeerPath::kDevice).add_quantity<double>("u");
    const std::vector<size_t> esize{8};
    d.realize();
    ASSERT_EQ(d.subdomains().size(), 1u);
    const bool send_only = d.subdomains()[0].box().hi.x == d.extent().x;
    for (int round = 0; round < 3; ++round) {
      stencil_check::fill(d, esize, round, kUpload);
      ASSERT_EQ(stencil_check::occupy_gpu(100, program), 0);
      d.start_exchange();
      if (send_only) {
        EXPECT_FALSE(d.progress()) << "round " << round << ": true before its sends were posted";
      }
      while (!d.progress()) {
      }
      d.finish_exchange();
      EXPECT_EQ(stencil_check::verify(d, esize, round, {false, true, true}, kDownload, {reach}), 0) << "round " << round;
      d.swap();
    }
    EXPECT_EQ(d.stats().deferred_sends, 3);
    ASSERT_EQ(cudaStreamSynchronize(program), cudaSuccess);
  }
  cudaStreamDestroy(program);
}

// Without a setter, DTMPI_STENCIL_OVERLAP_BLOCKS decides (unset: 1).
TEST(StencilGpuOverlap, DefaultAsTheEnvironmentSays) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  const char* v = std::getenv("DTMPI_STENCIL_OVERLAP_BLOCKS");
  st::DistributedDomain d(MPI_COMM_WORLD, {20, 18, 16});
  d.set_memory(st::Memory::kDevice).add_quantity<double>("u");
  d.realize();
  EXPECT_EQ(d.stats().overlap_blocks_per_sm, v ? std::atoi(v) : 1);
}
