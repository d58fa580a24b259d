#include "transport/predict.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#include "base/footprint.hpp"
#include "base/log.hpp"
#include "runtime/config.hpp"
#include "transport/descriptor.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::transport {

Prediction predict(const Model& m, const Shape& s, int64_t chunk_bytes) {
  Prediction p;
  const double b = static_cast<double>(s.bytes), blk = static_cast<double>(std::max<int64_t>(s.block, 1));
  const double pitch = s.pitch > 0 ? static_cast<double>(s.pitch) : kNarrowPitch * blk;
  const double mpi = m.mpi.at(b);
  const double pack_dev = device_kernel_time(m.pack_device, m.pack_device_wide, b, blk, pitch);
  const double unpack_dev = device_kernel_time(m.unpack_device, m.unpack_device_wide, b, blk, pitch);
  auto& t = p.seconds;
  t[static_cast<int>(Method::kOneShot)] = m.pack_mapped.at(b, blk) + mpi + m.unpack_mapped.at(b, blk);
  t[static_cast<int>(Method::kStaged)] = pack_dev + m.d2h.at(b) + mpi + m.h2d.at(b) + unpack_dev;
  if (s.multi) {
    // pipeline of n chunks through three stages: fill, then the slowest stage
    const double c = static_cast<double>(std::min<int64_t>(chunk_bytes, s.bytes));
    const double n = std::ceil(b / c);
    const double d2h = m.d2h.at(c), net = m.mpi.at(c), h2d = m.h2d.at(c);
    t[static_cast<int>(Method::kPipelined)] = pack_dev + m.mpi.at(kDescriptorBytes) + d2h + net + h2d +
                                              (n - 1) * std::max({d2h, net, h2d}) + unpack_dev;
    if (s.ipc && !m.ipc.empty())
      t[static_cast<int>(Method::kDevice)] = pack_dev + m.mpi.at(kDescriptorBytes) + std::max(m.ipc.at(b), unpack_dev);
  }
  int best = 0;
  for (int i = 1; i < 4; ++i)
    if (t[i] >= 0 && t[i] < t[best]) best = i;
  p.best = static_cast<Method>(best);
  return p;
}

namespace {

struct State {
  std::shared_mutex mu;
  Model model = default_model();
  std::unordered_map<uint64_t, Method> memo;
};

State& state() {
  static auto* s = new State;
  return *s;
}

// The model's tables and the memo of method choices per shape class (bounded
// by the classes: sizes x blocks x pitches, never by peers).
void report_footprint(std::vector<footprint::Part>& out) {
  auto& s = state();
  std::shared_lock lock(s.mu);
  const Model& m = s.model;
  size_t doubles = 0;
  for (const Curve* c : {&m.d2h, &m.h2d, &m.mpi, &m.ipc})
    doubles += c->bytes.capacity() + c->seconds.capacity() + c->spread.capacity();
  for (const Grid* g : {&m.pack_device, &m.unpack_device, &m.pack_device_wide, &m.unpack_device_wide,
                        &m.pack_mapped, &m.unpack_mapped}) {
    doubles += g->bytes.capacity() + g->blocks.capacity();
    for (const auto* rows : {&g->seconds, &g->spread})
      for (const auto& row : *rows) doubles += row.capacity();
  }
  const int64_t model = static_cast<int64_t>(doubles * sizeof(double));
  const size_t node = sizeof(std::pair<const uint64_t, Method>) + 2 * sizeof(void*);
  out.push_back({"performance model", "fixed", model, 0});
  out.push_back({"method memo", "use", static_cast<int64_t>(s.memo.size() * node + s.memo.bucket_count() * sizeof(void*)), 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

// Quarter-octave classes of sizes: predictions differ by less than ~19%
// within one, far less than between methods.
uint64_t size_class(int64_t x) { return static_cast<uint64_t>(std::lround(4 * std::log2(std::max<int64_t>(x, 1)))); }

uint64_t key_of(const Shape& s) {
  // pitch in octaves of pitch/block, capped: the model interpolates up to 16x
  const uint64_t sparse = s.pitch > s.block ? std::min<uint64_t>(size_class(s.pitch / std::max<int64_t>(s.block, 1)) / 4, 7) : 0;
  return size_class(s.bytes) << 24 | size_class(s.block) << 12 | sparse << 2 | (s.ipc ? 2u : 0u) | (s.multi ? 1u : 0u);
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return s;
}

}  // namespace

const Model& current_model() { return state().model; }

std::string model_cache_dir() {
  return runtime::config().cache_dir;
}

std::string model_file_name(const std::string& host, const std::string& gpu) {
  return "model-" + sanitize(host) + "-" + sanitize(gpu.empty() ? "nogpu" : gpu) + ".json";
}

std::string load_model(int rank, const std::string& gpu_name) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string path = model_cache_dir() + "/" + model_file_name(host, gpu_name);
  std::ifstream f(path);
  std::string why;
  std::optional<Model> m;
  if (!f) {
    why = "no file";
  } else {
    std::stringstream ss;
    ss << f.rdbuf();
    m = parse_model(ss.str(), &why);
    if (m && m->library_version != DTMPI_VERSION) {
      why = "made by dtmpi " + m->library_version + ", this is " + DTMPI_VERSION;
      m.reset();
    } else if (m && m->gpu != gpu_name) {
      why = "measured on GPU '" + m->gpu + "', this is '" + gpu_name + "'";
      m.reset();
    }
  }
  State& s = state();
  std::unique_lock lock(s.mu);
  s.memo.clear();
  if (m) {
    s.model = std::move(*m);
    DTMPI_LOG(kInfo, "performance model loaded from %s", path.c_str());
  } else {
    s.model = default_model();
    // said once, by rank 0; a warning where the model matters (GPU jobs)
    if (rank == 0 && why != "no file")
      DTMPI_LOG(kWarn, "performance model %s refused: %s; using built-in defaults", path.c_str(), why.c_str());
    else if (rank == 0 && !gpu_name.empty())
      DTMPI_LOG(kWarn, "no performance model for this machine (%s): built-in defaults; run dtmpi-measure once",
                path.c_str());
    else if (rank == 0)
      DTMPI_LOG(kInfo, "no performance model (%s): built-in defaults", path.c_str());
  }
  return path;
}

Method choose_by_model(const Shape& s) {
  State& st = state();
  const uint64_t key = key_of(s);
  {
    std::shared_lock lock(st.mu);
    auto it = st.memo.find(key);
    if (it != st.memo.end()) return it->second;
  }
  std::unique_lock lock(st.mu);
  const Prediction p = predict(st.model, s, runtime::config().pipeline_chunk);
  st.memo.emplace(key, p.best);
  if (runtime::config().log_decisions)
    DTMPI_LOG(kInfo,
              "decision: %lld B in %lld B blocks%s -> %s (predicted us: oneshot %.1f, staged %.1f, pipelined %.1f, "
              "device %.1f; %s)",
              static_cast<long long>(s.bytes), static_cast<long long>(s.block), s.ipc ? ", IPC peer" : "",
              method_name(p.best), p.seconds[0] * 1e6, p.seconds[1] * 1e6, p.seconds[2] * 1e6, p.seconds[3] * 1e6,
              st.model.defaults ? "built-in defaults" : "measured model");
  return p.best;
}

void clear_decisions() {
  std::unique_lock lock(state().mu);
  state().memo.clear();
}

}  // namespace dtmpi::transport
