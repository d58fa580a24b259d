// What the machine offers (CUDA builds): GPUs, peer access, managed memory,
// the GPU's NUMA node, and the nominal figures the results are compared with:
// HBM from the memory clock and bus width (cudaDeviceGetAttribute), PCIe
// from the link's generation and width (sysfs: the lower of the GPU and the
// port above it; else nvidia-smi), NVLink from nvidia-smi nvlink -s.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "scope.hpp"

namespace dtmpi::scope {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

// GB/s per direction of one lane at `gts` GT/s (the line code of its generation)
double lane_gbps(double gts) {
  if (gts <= 0) return 0;
  const double code = gts <= 5.01 ? 8.0 / 10 : gts <= 32.01 ? 128.0 / 130 : 242.0 / 256;
  return gts * code / 8;
}

int generation(double gts) {
  const double g[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i)
    if (std::abs(gts - g[i]) < 0.1) return i + 1;
  return 0;
}

void detect_pcie(Machine& m, const std::string& bus) {
  // sysfs: "32.0 GT/s PCIe" and "16"; the link runs at the lower of the GPU and its port
  const std::string dev = "/sys/bus/pci/devices/" + bus;
  char real[4096] = {};
  double gts = 0, now_gts = 0;
  int width = 0, now_width = 0;
  if (realpath(dev.c_str(), real)) {
    const std::string me = real, up = me.substr(0, me.rfind('/'));
    auto speed = [](const std::string& d, const char* f) { return std::atof(read_line(d + "/" + f).c_str()); };
    auto lanes = [](const std::string& d, const char* f) { return std::atoi(read_line(d + "/" + f).c_str()); };
    gts = speed(me, "max_link_speed");
    width = lanes(me, "max_link_width");
    if (const double u = speed(up, "max_link_speed"); u > 0 && gts > 0) gts = std::min(gts, u);
    if (const int u = lanes(up, "max_link_width"); u > 0 && width > 0) width = std::min(width, u);
    now_gts = speed(me, "current_link_speed");
    now_width = lanes(me, "current_link_width");
  }
  if (gts > 0 && width > 0) {
    m.pcie = lane_gbps(gts) * width;
    char how[160];
    std::snprintf(how, sizeof how, "PCIe gen%d x%d, sysfs; link now gen%d x%d", generation(gts), width,
                  generation(now_gts), now_width);
    m.pcie_how = how;
    return;
  }
  // nvidia-smi: the highest generation GPU and system allow, and the width
  const std::string q = run("timeout 20 nvidia-smi -i " + bus +
                            " --query-gpu=pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,"
                            "pcie.link.width.current --format=csv,noheader,nounits 2>/dev/null");
  int gen = 0, w = 0, gen_now = 0, w_now = 0;
  if (std::sscanf(q.c_str(), "%d, %d, %d, %d", &gen, &w, &gen_now, &w_now) >= 2 && gen >= 1 && gen <= 6 && w > 0) {
    const double per_gen[] = {2.5, 5, 8, 16, 32, 64};
    m.pcie = lane_gbps(per_gen[gen - 1]) * w;
    m.pcie_how = "PCIe gen" + std::to_string(gen) + " x" + std::to_string(w) + ", nvidia-smi; link now gen" +
                 std::to_string(gen_now) + " x" + std::to_string(w_now);
    return;
  }
  m.pcie_how = "neither sysfs nor nvidia-smi told the link";
}

void detect_nvlink(Machine& m, const std::string& bus) {
  // "Link 0: 26.562 GB/s" per active link (per direction)
  const std::string out = run("timeout 20 nvidia-smi nvlink -s -i " + bus + " 2>/dev/null");
  std::istringstream in(out);
  std::string line;
  double sum = 0;
  int links = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find("Link ");
    const auto unit = line.find("GB/s");
    if (colon == std::string::npos || unit == std::string::npos) continue;
    const auto c = line.find(':', colon);
    if (c == std::string::npos) continue;
    const double v = std::atof(line.c_str() + c + 1);
    if (v > 0) sum += v, ++links;
  }
  if (links) {
    m.nvlink = sum;
    m.nvlink_how = std::to_string(links) + " active links, nvidia-smi nvlink -s";
  } else {
    m.nvlink_how = out.empty() ? "nvidia-smi nvlink -s gave nothing" : "no active NVLink";
  }
}

}  // namespace

void detect_machine() {
  Machine& m = mutable_machine();
  Options& o = mutable_options();
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    m.gpus = 0;
    m.no_gpu = std::string("no GPU (") + (e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device") + ")";
    return;
  }
  m.gpus = n;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    m.gpu_names.push_back(cudaGetDeviceProperties(&p, d) == cudaSuccess ? p.name : "?");
  }
  if (o.gpu < 0 || o.gpu >= n) return;  // main reports it
  if (o.peer == -2) o.peer = n > 1 ? (o.gpu + 1) % n : -1;  // default: the next GPU
  int managed = 0;
  cudaDeviceGetAttribute(&managed, cudaDevAttrConcurrentManagedAccess, o.gpu);
  m.managed_ok = managed != 0;
  if (!m.managed_ok) m.no_managed = "GPU " + std::to_string(o.gpu) + " has no concurrent managed access";
  if (o.peer >= 0 && o.peer < n) {
    int ab = 0, ba = 0;
    cudaDeviceCanAccessPeer(&ab, o.gpu, o.peer);
    cudaDeviceCanAccessPeer(&ba, o.peer, o.gpu);
    m.peer_ok = ab && ba;
    if (!m.peer_ok) m.no_peer = "GPUs " + std::to_string(o.gpu) + " and " + std::to_string(o.peer) + " cannot access each other as peers";
  }
  // nominal figures
  int clock_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, o.gpu);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, o.gpu);
  if (clock_khz > 0 && bus_bits > 0) {
    m.hbm = 2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e9;
    m.hbm_how = "memory clock " + std::to_string(clock_khz / 1000) + " MHz x " + std::to_string(bus_bits) +
                "-bit bus x 2 (double data rate)";
  }
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, o.gpu) == cudaSuccess) {
    std::string b = bus;
    for (char& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (b.size() > 12) b = b.substr(b.size() - 12);  // sysfs names the domain with 4 digits
    detect_pcie(m, b);
    if (n > 1) detect_nvlink(m, b);
    const std::string node = read_line("/sys/bus/pci/devices/" + b + "/numa_node");
    if (!node.empty()) m.gpu_numa_node = std::atoi(node.c_str());
  }
  if (n == 1) m.nvlink_how = "one GPU";
  cudaGetLastError();
}

}  // namespace dtmpi::scope
