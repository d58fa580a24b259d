#include "transport/model.hpp"

#include <algorithm>
#include <cmath>

namespace dtmpi::transport {
namespace {

// Index i with xs[i] <= x <= xs[i+1] (clamped) and the weight of xs[i+1], in log space.
void bracket(const std::vector<double>& xs, double x, size_t& i, double& w) {
  if (xs.size() < 2 || x <= xs.front()) {
    i = 0;
    w = 0;
    return;
  }
  if (x >= xs.back()) {
    i = xs.size() - 2;
    w = 1;
    return;
  }
  i = static_cast<size_t>(std::upper_bound(xs.begin(), xs.end(), x) - xs.begin()) - 1;
  w = (std::log(x) - std::log(xs[i])) / (std::log(xs[i + 1]) - std::log(xs[i]));
}

double lerp_log(double a, double b, double w) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return std::exp(std::log(a) * (1 - w) + std::log(b) * w);
}

}  // namespace

double Curve::at(double b) const {
  if (bytes.empty()) return 0;
  if (bytes.size() == 1) return seconds[0];
  size_t i;
  double w;
  bracket(bytes, std::max(b, 1.0), i, w);
  return lerp_log(seconds[i], seconds[i + 1], w);
}

double Grid::at(double b, double block) const {
  if (bytes.empty() || blocks.empty()) return 0;
  b = std::max(b, 1.0);
  block = std::clamp(block, 1.0, b);
  auto along_blocks = [&](size_t r) {
    const auto& row = seconds[r];
    if (blocks.size() == 1) return row[0];
    size_t j;
    double w;
    bracket(blocks, block, j, w);
    // a block larger than the object was not measured: use the largest that was
    while (j > 0 && row[j] <= 0) --j, w = 1;
    return lerp_log(row[j], row[j + 1] > 0 ? row[j + 1] : row[j], w);
  };
  if (bytes.size() == 1) return along_blocks(0);
  size_t i;
  double w;
  bracket(bytes, b, i, w);
  return lerp_log(along_blocks(i), along_blocks(i + 1), w);
}

double device_kernel_time(const Grid& narrow, const Grid& wide, double bytes, double block, double pitch) {
  const double t = narrow.at(bytes, block);
  if (wide.empty() || pitch <= block) return t;
  const double w = std::clamp(std::log(pitch / block / kNarrowPitch) / std::log(kWidePitch / kNarrowPitch), 0.0, 1.0);
  return lerp_log(t, wide.at(bytes, block), w);
}

Model default_model() {
  Model m;
  m.defaults = true;
  const std::vector<double> sizes = {1, 1024, 65536, 1 << 20, 1 << 24, 1 << 26};
  auto curve = [&](double latency, double bandwidth) {
    Curve c;
    for (double s : sizes) {
      c.bytes.push_back(s);
      c.seconds.push_back(latency + s / bandwidth);
      c.spread.push_back(0);
    }
    return c;
  };
  m.mpi = curve(2e-6, 5e9);
  m.d2h = curve(8e-6, 20e9);
  m.h2d = curve(8e-6, 20e9);
  m.ipc = curve(15e-6, 100e9);
  auto grid = [&](double latency, double bandwidth, double per_small_block) {
    Grid g;
    g.bytes = sizes;
    g.blocks = {1, 16, 256, 4096};
    for (double s : sizes) {
      std::vector<double> row, sp;
      for (double b : g.blocks) {
        row.push_back(b > s ? -1 : latency + s / bandwidth + (s / b) * per_small_block / 1e3);
        sp.push_back(0);
      }
      g.seconds.push_back(row);
      g.spread.push_back(sp);
    }
    return g;
  };
  m.pack_device = m.unpack_device = grid(10e-6, 500e9, 1e-9);
  m.pack_mapped = m.unpack_mapped = grid(10e-6, 15e9, 1e-9);
  return m;
}

}  // namespace dtmpi::transport
