#include "scope_results.hpp"

#include <cstdlib>
#include <algorithm>
#include <map>

#include "base/json.hpp"
#include "transport/predict.hpp"

namespace dtmpi::scope {
namespace {

using json::Value;

double unit_seconds(const std::string& u) {
  return u == "ns" ? 1e-9 : u == "us" ? 1e-6 : u == "ms" ? 1e-3 : 1;
}

struct Point {
  double seconds = -1, spread = 0;
  bool failed = false;
};

// name "ROW/bytes:N/..." -> N for rows equal to `row`, else -1
long long bytes_of(const std::string& name, const std::string& row) {
  const std::string head = row + "/bytes:";
  if (name.rfind(head, 0) != 0) return -1;
  return std::atoll(name.c_str() + head.size());
}

transport::Curve curve_of(const Value& benchmarks, const std::string& row) {
  std::map<long long, Point> points;
  for (const auto& b : benchmarks.items) {
    const Value* name = json::field(b, "run_name", Value::kString);
    if (!name) name = json::field(b, "name", Value::kString);
    if (!name) continue;
    const long long bytes = bytes_of(name->text, row);
    if (bytes <= 0) continue;
    Point& p = points[bytes];
    if (const Value* err = json::field(b, "error_occurred", Value::kBool); err && err->boolean) {
      p.failed = true;
      continue;
    }
    const Value* type = json::field(b, "run_type", Value::kString);
    const Value* agg = json::field(b, "aggregate_name", Value::kString);
    const Value* t = json::field(b, "real_time", Value::kNumber);
    const Value* unit = json::field(b, "time_unit", Value::kString);
    if (!t) continue;
    if (type && type->text == "aggregate" && agg) {
      if (agg->text == "median" && unit) p.seconds = t->number * unit_seconds(unit->text);
      if (agg->text == "spread") p.spread = t->number;
    } else if (p.seconds < 0 && unit) {  // a run of one repetition: no aggregates follow
      p.seconds = t->number * unit_seconds(unit->text);
    }
  }
  transport::Curve c;
  for (const auto& [bytes, p] : points) {
    if (p.failed || !(p.seconds > 0)) return {};
    c.bytes.push_back(static_cast<double>(bytes));
    c.seconds.push_back(p.seconds);
    c.spread.push_back(p.spread);
  }
  if (c.bytes.size() < 6 || c.bytes.front() > 1024 || c.bytes.back() < 64.0 * 1024 * 1024) return {};
  return c;
}

}  // namespace

std::string results_file_name(const std::string& host, const std::string& gpu) {
  return "scope-" + transport::model_file_name(host, gpu).substr(6);  // "model-..." -> "scope-..."
}

bool read_model_terms(const std::string& text, const std::string& host, const std::string& gpu_name, int gpu,
                      int src_gpu, ModelTerms& out, std::string* why) {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  Value root;
  if (!json::parse(text, root) || root.kind != Value::kObject) return fail("not JSON");
  const Value* ctx = json::field(root, "context", Value::kObject);
  const Value* benchmarks = json::field(root, "benchmarks", Value::kArray);
  if (!ctx || !benchmarks) return fail("not Google Benchmark results");
  const Value* format = json::field(*ctx, "dtmpi_scope_format", Value::kString);
  if (!format) return fail("not dtmpi-scope's results");
  const Value* h = json::field(*ctx, "dtmpi_host", Value::kString);
  const Value* g = json::field(*ctx, "dtmpi_gpu", Value::kString);
  if (!h || h->text != host) return fail("measured on host '" + (h ? h->text : "?") + "', this is '" + host + "'");
  if (!g || g->text != gpu_name)
    return fail("measured on GPU '" + (g ? g->text : "?") + "', this is '" + gpu_name + "'");
  const std::string gg = "gpu" + std::to_string(gpu);
  out.d2h_row = "naive/pinned/d2h/" + gg;
  out.h2d_row = "naive/pinned/h2d/" + gg;
  out.ipc_row = src_gpu == gpu ? "naive/device/d2d/" + gg : "naive/peer/d2d/gpu" + std::to_string(src_gpu) + "-" + gg;
  out.d2h = curve_of(*benchmarks, out.d2h_row);
  out.h2d = curve_of(*benchmarks, out.h2d_row);
  out.ipc = curve_of(*benchmarks, out.ipc_row);
  out.sizes = static_cast<int>(std::max({out.d2h.bytes.size(), out.h2d.bytes.size(), out.ipc.bytes.size()}));
  if (out.d2h.empty() && out.h2d.empty() && out.ipc.empty())
    return fail("none of " + out.h2d_row + ", " + out.d2h_row + ", " + out.ipc_row + " is complete in it");
  return true;
}

}  // namespace dtmpi::scope
