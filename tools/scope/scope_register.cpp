// The registry: rows become Google Benchmark instances with the suite's
// statistics and counters; the full names are kept to count what a filter
// selects (progress) and to know whether MPI is needed.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <regex>

#include "scope.hpp"

namespace dtmpi::scope {
namespace {

std::vector<std::string>& names() {
  static std::vector<std::string> n;
  return n;
}

double min_of(const std::vector<double>& v) {
  double m = v.empty() ? 0 : v[0];
  for (double x : v) m = x < m ? x : m;
  return m;
}
double max_of(const std::vector<double>& v) {
  double m = v.empty() ? 0 : v[0];
  for (double x : v) m = x > m ? x : m;
  return m;
}
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
// (max - min) / median of the repetitions: the suite's stability figure
double spread_of(const std::vector<double>& v) {
  const double med = median_of(v);
  return med > 0 ? (max_of(v) - min_of(v)) / med : 0;
}

void run_row(benchmark::State& state, const Row& row) {
  const int64_t arg = row.sizes.empty() ? 0 : state.range(0);
  Status s = row.body(state, arg);
  if (!s) {
    state.SkipWithError(("error: " + s.error().what).c_str());
    return;
  }
  if (row.sizes.empty() || row.arg_name != std::string("bytes")) return;
  if (row.multiplier > 0 && state.iterations() > 0)
    state.SetBytesProcessed(state.iterations() * arg * row.multiplier);
  state.counters["bytes"] = static_cast<double>(arg);
}

}  // namespace

const Options& options() { return mutable_options(); }
const Machine& machine() { return mutable_machine(); }
Options& mutable_options() {
  static Options o;
  return o;
}
Machine& mutable_machine() {
  static Machine m;
  return m;
}

void add(Row row) {
  if (!row.skip.empty()) {
    const std::string why = "skipped: " + row.skip;
    benchmark::RegisterBenchmark(row.name.c_str(), [why](benchmark::State& st) { st.SkipWithError(why.c_str()); });
    names().push_back(row.name);
    return;
  }
  auto shared = std::make_shared<Row>(std::move(row));
  const Row& r = *shared;
  auto* b = benchmark::RegisterBenchmark(r.name.c_str(), [shared](benchmark::State& st) { run_row(st, *shared); });
  const bool transfer = r.arg_name == std::string("bytes") && !r.sizes.empty();
  b->Unit(transfer ? benchmark::kMicrosecond : benchmark::kNanosecond);
  if (!r.sizes.empty()) {
    b->ArgName(r.arg_name);
    for (int64_t s : r.sizes) b->Arg(s);
  }
  if (r.timing == Timing::kManual)
    b->UseManualTime();
  else
    b->UseRealTime();
  if (!r.threads.empty())
    for (int t : r.threads) b->Threads(t);
  b->ComputeStatistics("min", min_of);
  b->ComputeStatistics("max", max_of);
  b->ComputeStatistics("spread", spread_of, benchmark::kPercentage);
  // the names Google Benchmark gives the instances (for counting what a filter selects)
  const std::string time_type = r.timing == Timing::kManual ? "/manual_time" : "/real_time";
  std::vector<std::string> args;
  for (int64_t s : r.sizes) args.push_back("/" + std::string(r.arg_name) + ":" + std::to_string(s));
  if (args.empty()) args.push_back("");
  for (const auto& a : args) {
    if (r.threads.empty()) names().push_back(r.name + a + time_type);
    for (int t : r.threads) names().push_back(r.name + a + time_type + "/threads:" + std::to_string(t));
  }
}

std::vector<int64_t> sizes_up_to(int64_t max_bytes) {
  std::vector<int64_t> v;
  for (int64_t s : options().sizes)
    if (s <= max_bytes) v.push_back(s);
  return v;
}

const std::vector<std::string>& registered_names() { return names(); }

namespace {
// Google Benchmark's selection: a regular expression (POSIX extended, searched
// in the full name); "" and "all" select everything; a leading '-' negates.
template <class F>
void for_selected(std::string spec, F f) {
  bool negative = false;
  if (spec.empty() || spec == "all") spec = ".";
  if (spec[0] == '-') {
    spec.erase(0, 1);
    negative = true;
  }
  std::regex re;
  try {
    re = std::regex(spec, std::regex::extended);
  } catch (const std::regex_error&) {
    return;
  }
  for (const auto& n : names())
    if (std::regex_search(n, re) != negative) f(n);
}
}  // namespace

std::vector<std::string> selected(const std::string& filter) {
  std::vector<std::string> v;
  for_selected(filter, [&](const std::string& n) { v.push_back(n); });
  return v;
}

size_t count_selected(const std::string& filter) {
  size_t n = 0;
  for_selected(filter, [&](const std::string&) { ++n; });
  return n;
}

bool any_selected(const std::string& filter, const std::string& prefix) {
  bool any = false;
  for_selected(filter, [&](const std::string& n) { any = any || n.rfind(prefix, 0) == 0; });
  return any;
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, b == static_cast<int64_t>(b) ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

}  // namespace dtmpi::scope
