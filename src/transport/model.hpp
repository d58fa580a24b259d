// The measured performance model (issue 5): what dtmpi-measure records about a
// machine and how a transfer's time is predicted from it. Pure C++ values and
// functions (no MPI, no CUDA): the tool writes a Model, the runtime reads it.
//
// Curves are functions of a byte count, grids of (object bytes, contiguous
// block bytes); both are interpolated linearly in log-log space and clamped at
// the edges of what was measured.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtmpi::transport {

inline constexpr int kModelSchema = 1;
inline constexpr double kNarrowPitch = 2, kWidePitch = 16;  // pitch / block of the measured layouts

struct Curve {
  std::vector<double> bytes;    // increasing
  std::vector<double> seconds;  // one per byte count
  std::vector<double> spread;   // (max - min) / median of the samples
  bool empty() const { return bytes.empty(); }
  double at(double b) const;
};

struct Grid {
  std::vector<double> bytes;   // object sizes, increasing
  std::vector<double> blocks;  // block sizes, increasing
  std::vector<std::vector<double>> seconds;  // [bytes][blocks]; <= 0: not measured (block > bytes)
  std::vector<std::vector<double>> spread;
  bool empty() const { return bytes.empty(); }
  double at(double b, double block) const;
};

struct Model {
  int schema = kModelSchema;
  std::string library_version;
  std::string host;
  std::string gpu;          // GPU model name, "" for a host-only measurement
  bool same_node = true;    // the two measuring ranks shared a node
  bool quick = false;
  double min_sample_s = 200e-6;
  int samples = 5;
  bool defaults = false;    // built-in conservative values, not a measurement

  Curve mpi;                // one-way host MPI time of a message
  Curve d2h, h2d;           // pinned copies
  Curve ipc;                // GPU to GPU between the two ranks (peer copy)
  Grid pack_device, unpack_device;  // kernels into / out of device memory (pitch 2 x block)
  // the same kernels with a wide pitch (kWidePitch x block): where blocks are
  // sparse in memory, DRAM moves whole sectors for few used bytes
  Grid pack_device_wide, unpack_device_wide;
  Grid pack_mapped, unpack_mapped;  // kernels into / out of mapped pinned host memory
};

// Pack (or unpack) time on the device for `bytes` in blocks of `block` bytes
// `pitch` apart: the narrow and wide grids interpolated in log(pitch/block).
double device_kernel_time(const Grid& narrow, const Grid& wide, double bytes, double block, double pitch);

// Built-in values for a machine nobody measured: conservative (PCIe-class
// copies, shared-memory MPI), so the fixed rule's choices come out.
Model default_model();

// JSON text of `m`, and back. parse_model returns nullopt (and `why`) for
// anything that is not a complete model of this schema.
std::string to_json(const Model& m);
std::optional<Model> parse_model(const std::string& text, std::string* why);

}  // namespace dtmpi::transport
