#include "scope_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "scope.hpp"

namespace dtmpi::scope {
namespace {

double unit_seconds(benchmark::TimeUnit u) {
  switch (u) {
    case benchmark::kNanosecond: return 1e-9;
    case benchmark::kMicrosecond: return 1e-6;
    case benchmark::kMillisecond: return 1e-3;
    default: return 1;
  }
}

// The per-iteration seconds of a run (an aggregate in percent: the raw value).
double seconds_of(const benchmark::BenchmarkReporter::Run& r) {
  if (r.run_type == benchmark::BenchmarkReporter::Run::RT_Aggregate && r.aggregate_unit == benchmark::kPercentage)
    return r.real_accumulated_time;
  return r.GetAdjustedRealTime() * unit_seconds(r.time_unit);
}

// Google Benchmark 1.8 renamed a run's error (SkipWithError) to `skipped` /
// `skip_message`; the suite builds against 1.7 (Debian) and 1.8 (Ubuntu 24.04).
template <class R>
bool run_failed(const R& r) {
  if constexpr (requires { r.error_occurred; })
    return r.error_occurred;
  else
    return static_cast<int>(r.skipped) != 0;
}
template <class R>
std::string run_message(const R& r) {
  if constexpr (requires { r.error_message; })
    return r.error_message;
  else
    return r.skip_message;
}

double counter(const benchmark::BenchmarkReporter::Run& r, const char* name, double none = 0) {
  auto it = r.counters.find(name);
  return it == r.counters.end() ? none : it->second.value;
}

// Splits a full name into the row and its argument / threads.
void parse_name(Result& r) {
  std::stringstream ss(r.name);
  std::string part, row;
  while (std::getline(ss, part, '/')) {
    const auto colon = part.find(':');
    if (part == "manual_time" || part == "real_time") continue;
    if (colon != std::string::npos && part.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
      const std::string key = part.substr(0, colon);
      const int64_t v = std::atoll(part.c_str() + colon + 1);
      if (key == "threads") {
        r.threads = static_cast<int>(v);
      } else {
        r.arg_name = key;
        r.arg = v;
      }
      continue;
    }
    row += (row.empty() ? "" : "/") + part;
  }
  r.row = row;
}

std::string time_text(double s) {
  char buf[32];
  if (s < 1e-6)
    std::snprintf(buf, sizeof buf, "%.1f ns", s * 1e9);
  else if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// "gpu0-gpu1" -> true when the two differ; "gpu0" -> false
bool two_gpus(const std::string& place) {
  const auto dash = place.find('-');
  return dash != std::string::npos && place.substr(0, dash) != place.substr(dash + 1);
}

}  // namespace

double nominal_for(const std::string& row, std::string* what) {
  const Machine& m = machine();
  std::stringstream ss(row);
  std::string family, dir, place;
  std::getline(ss, family, '/');
  if (family == "naive") std::getline(ss, family, '/');
  std::getline(ss, dir, '/');
  std::getline(ss, place, '/');
  if (family == "host" || family == "cpu" || family == "dtmpi") return 0;
  const double both = dir == "bidir" ? 2 : 1;
  auto say = [&](const char* w, double v) {
    if (what) *what = w;
    return v * both;
  };
  // host <-> device: a direction named so, or both at once between a host buffer and one GPU
  int gpus = 0;
  for (size_t at = place.find("gpu"); at != std::string::npos; at = place.find("gpu", at + 1)) ++gpus;
  if (dir == "h2d" || dir == "d2h" || (dir == "bidir" && gpus == 1)) return say("PCIe", m.pcie);
  if (!two_gpus(place)) return say("HBM/2", m.hbm / 2);  // a copy within one GPU reads and writes every byte
  if (family == "nopeer" || m.nvlink <= 0) return say("PCIe", m.pcie);
  return say("NVLink", m.nvlink);
}

bool Reporter::ReportContext(const Context&) {
  terminal_ = isatty(fileno(stderr)) != 0;
  t0_ = std::chrono::steady_clock::now();
  return true;
}

void Reporter::ReportRuns(const std::vector<Run>& runs) {
  if (runs.empty()) return;
  const bool aggregates = runs[0].run_type == Run::RT_Aggregate;
  Result r;
  r.name = runs[0].benchmark_name();
  if (aggregates) {
    // "name_median" etc.: the instance name is the run_name without the suffix
    r.name = runs[0].run_name.str();
    auto it = pending_.find(r.name);
    if (it != pending_.end()) r = it->second;
    for (const auto& a : runs) {
      const double s = seconds_of(a);
      if (a.aggregate_name == "median") {
        r.median_s = s;
        r.gbps = counter(a, "bytes_per_second") / 1e9;
        r.items_per_s = counter(a, "items_per_second");
        r.skew = counter(a, "skew", -1);
        r.restarts = counter(a, "restarts");
        r.reps = static_cast<int>(a.repetitions);
      } else if (a.aggregate_name == "min") {
        r.min_s = s;
        r.gbps_min = counter(a, "bytes_per_second") / 1e9;  // statistics apply to each counter alone
      } else if (a.aggregate_name == "max") {
        r.max_s = s;
        r.gbps_max = counter(a, "bytes_per_second") / 1e9;
      } else if (a.aggregate_name == "spread") {
        r.spread = s;
      }
    }
    pending_.erase(r.name);
    finish(std::move(r));
    return;
  }
  r.name = runs[0].run_name.str();
  for (const auto& x : runs)
    if (run_failed(x)) {
      r.error = run_message(x);
      pending_.erase(r.name);
      finish(std::move(r));
      return;
    }
  const Run& one = runs.back();
  r.median_s = r.min_s = r.max_s = seconds_of(one);
  r.gbps = r.gbps_min = r.gbps_max = counter(one, "bytes_per_second") / 1e9;
  r.items_per_s = counter(one, "items_per_second");
  r.skew = counter(one, "skew", -1);
  r.restarts = counter(one, "restarts");
  r.reps = static_cast<int>(runs.size());
  if (one.repetitions > 1) {
    // the aggregates follow in another call; the spread of these repetitions meanwhile
    pending_[r.name] = r;
    return;
  }
  finish(std::move(r));
}

void Reporter::finish(Result r) {
  parse_name(r);
  std::printf("%s\n", summary_line(r).c_str());
  std::fflush(stdout);
  results_.push_back(std::move(r));
  progress();
}

void Reporter::progress() {
  const size_t done = results_.size(), total = std::max(expected_, done);
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double left = done ? el / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  if (terminal_) {
    std::fprintf(stderr, "\r[%zu/%zu] %.0f s, about %.0f s left   ", done, total, el, left);
    if (done == total) std::fprintf(stderr, "\n");
    return;
  }
  const int tenth = static_cast<int>(10 * done / total);
  if (tenth == last_tenth_ && done != total) return;
  last_tenth_ = tenth;
  std::fprintf(stderr, "dtmpi-scope: %zu/%zu benchmarks, %.0f s, about %.0f s left\n", done, total, el, left);
}

void Reporter::Finalize() {
  for (auto& [name, r] : pending_) finish(r);  // repetitions whose aggregates never came
  pending_.clear();
}

std::string summary_line(const Result& r) {
  char buf[512];
  std::string arg;
  if (r.arg_name == "bytes")
    arg = bytes_text(static_cast<double>(r.arg));
  else if (!r.arg_name.empty())
    arg = r.arg_name + ":" + std::to_string(r.arg);
  if (r.threads > 1) arg += (arg.empty() ? "" : " ") + std::string("threads:") + std::to_string(r.threads);
  if (!r.error.empty()) {
    std::snprintf(buf, sizeof buf, "%-44s %-10s %s", r.row.c_str(), arg.c_str(), r.error.c_str());
    return buf;
  }
  std::string rate;
  if (r.gbps > 0) {
    char b[128];
    std::snprintf(b, sizeof b, "%9.3f GB/s (min %.3f, max %.3f)", r.gbps, r.gbps_min, r.gbps_max);
    rate = b;
  } else if (r.items_per_s > 0) {
    char b[64];
    std::snprintf(b, sizeof b, "%9.3f M calls/s", r.items_per_s / 1e6);
    rate = b;
  }
  std::snprintf(buf, sizeof buf, "%-44s %-10s %10s  %-38s spread %5.1f%%  %d rep%s", r.row.c_str(), arg.c_str(),
                time_text(r.median_s).c_str(), rate.c_str(), 100 * r.spread, r.reps, r.reps == 1 ? "" : "s");
  std::string line = buf;
  if (r.skew >= 0) {
    std::snprintf(buf, sizeof buf, "  skew %.1f%%", 100 * r.skew);
    line += buf;
  }
  if (r.restarts > 0) line += "  busy-wait restarts " + std::to_string(static_cast<long>(r.restarts));
  return line;
}

}  // namespace dtmpi::scope
