// The model file format: a small JSON document (written here, read with
// base/json.hpp): scalars, curves {bytes, seconds, spread} and grids {bytes,
// blocks, seconds[[...]], spread[[...]]}.
#include <cstdio>
#include <sstream>

#include "base/json.hpp"
#include "transport/model.hpp"

namespace dtmpi::transport {
namespace {

// ------------------------------------------------------------------ writing --
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string numbers(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", v[i]);
    out += buf;
  }
  return out + "]";
}

std::string rows(const std::vector<std::vector<double>>& m) {
  std::string out = "[";
  for (size_t i = 0; i < m.size(); ++i) out += (i ? ",\n      " : "") + numbers(m[i]);
  return out + "]";
}

std::string curve_json(const Curve& c) {
  return "{\"bytes\": " + numbers(c.bytes) + ",\n    \"seconds\": " + numbers(c.seconds) +
         ",\n    \"spread\": " + numbers(c.spread) + "}";
}

std::string grid_json(const Grid& g) {
  return "{\"bytes\": " + numbers(g.bytes) + ",\n    \"blocks\": " + numbers(g.blocks) +
         ",\n    \"seconds\": " + rows(g.seconds) + ",\n    \"spread\": " + rows(g.spread) + "}";
}

// ------------------------------------------------------------------ reading --
using json::Value;
using json::field;

bool numbers_of(const Value* a, std::vector<double>& out) {
  if (!a || a->kind != Value::kArray) return false;
  for (const auto& x : a->items) {
    if (x.kind != Value::kNumber) return false;
    out.push_back(x.number);
  }
  return true;
}

bool increasing(const std::vector<double>& v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (!(v[i] > v[i - 1])) return false;
  return !v.empty() && v.front() > 0;
}

bool curve_of(const Value& o, const char* name, Curve& c) {
  const Value* v = field(o, name, Value::kObject);
  if (!v) return false;
  if (!numbers_of(field(*v, "bytes", Value::kArray), c.bytes) ||
      !numbers_of(field(*v, "seconds", Value::kArray), c.seconds) ||
      !numbers_of(field(*v, "spread", Value::kArray), c.spread))
    return false;
  return increasing(c.bytes) && c.seconds.size() == c.bytes.size() && c.spread.size() == c.bytes.size();
}

bool grid_of(const Value& o, const char* name, Grid& g) {
  const Value* v = field(o, name, Value::kObject);
  if (!v) return false;
  if (!numbers_of(field(*v, "bytes", Value::kArray), g.bytes) ||
      !numbers_of(field(*v, "blocks", Value::kArray), g.blocks) || !increasing(g.bytes) || !increasing(g.blocks))
    return false;
  for (const char* part : {"seconds", "spread"}) {
    const Value* m = field(*v, part, Value::kArray);
    if (!m || m->items.size() != g.bytes.size()) return false;
    auto& dst = part[1] == 'e' ? g.seconds : g.spread;
    for (const auto& row : m->items) {
      dst.emplace_back();
      if (!numbers_of(&row, dst.back()) || dst.back().size() != g.blocks.size()) return false;
    }
  }
  return true;
}

}  // namespace

std::string to_json(const Model& m) {
  std::ostringstream o;
  o << "{\n  \"format\": \"dtmpi-model\",\n  \"schema\": " << m.schema
    << ",\n  \"library_version\": " << quote(m.library_version) << ",\n  \"host\": " << quote(m.host)
    << ",\n  \"gpu\": " << quote(m.gpu) << ",\n  \"same_node\": " << (m.same_node ? "true" : "false")
    << ",\n  \"settings\": {\"quick\": " << (m.quick ? "true" : "false") << ", \"min_sample_s\": " << m.min_sample_s
    << ", \"samples\": " << m.samples << "}";
  auto curve = [&](const char* name, const Curve& c) {
    if (!c.empty()) o << ",\n  \"" << name << "\": " << curve_json(c);
  };
  auto grid = [&](const char* name, const Grid& g) {
    if (!g.empty()) o << ",\n  \"" << name << "\": " << grid_json(g);
  };
  curve("mpi", m.mpi);
  curve("d2h", m.d2h);
  curve("h2d", m.h2d);
  curve("ipc", m.ipc);
  grid("pack_device", m.pack_device);
  grid("unpack_device", m.unpack_device);
  grid("pack_device_wide", m.pack_device_wide);
  grid("unpack_device_wide", m.unpack_device_wide);
  grid("pack_mapped", m.pack_mapped);
  grid("unpack_mapped", m.unpack_mapped);
  o << "\n}\n";
  return o.str();
}

std::optional<Model> parse_model(const std::string& text, std::string* why) {
  auto fail = [&](const char* w) -> std::optional<Model> {
    if (why) *why = w;
    return std::nullopt;
  };
  Value root;
  if (!json::parse(text, root) || root.kind != Value::kObject) return fail("not a JSON object");
  const Value* format = field(root, "format", Value::kString);
  if (!format || format->text != "dtmpi-model") return fail("not a dtmpi model file");
  const Value* schema = field(root, "schema", Value::kNumber);
  if (!schema || static_cast<int>(schema->number) != kModelSchema) return fail("another schema version");
  Model m;
  const Value* lib = field(root, "library_version", Value::kString);
  const Value* host = field(root, "host", Value::kString);
  const Value* gpu = field(root, "gpu", Value::kString);
  const Value* same = field(root, "same_node", Value::kBool);
  if (!lib || !host || !gpu || !same) return fail("header fields missing");
  m.library_version = lib->text;
  m.host = host->text;
  m.gpu = gpu->text;
  m.same_node = same->boolean;
  if (const Value* st = field(root, "settings", Value::kObject)) {
    if (const Value* q = field(*st, "quick", Value::kBool)) m.quick = q->boolean;
    if (const Value* s = field(*st, "min_sample_s", Value::kNumber)) m.min_sample_s = s->number;
    if (const Value* n = field(*st, "samples", Value::kNumber)) m.samples = static_cast<int>(n->number);
  }
  if (!curve_of(root, "mpi", m.mpi)) return fail("the host MPI curve is missing or malformed");
  // GPU terms are present only when the measuring machine had a GPU
  if (!m.gpu.empty()) {
    if (!curve_of(root, "d2h", m.d2h) || !curve_of(root, "h2d", m.h2d) || !grid_of(root, "pack_device", m.pack_device) ||
        !grid_of(root, "unpack_device", m.unpack_device) || !grid_of(root, "pack_mapped", m.pack_mapped) ||
        !grid_of(root, "unpack_mapped", m.unpack_mapped))
      return fail("a GPU term is missing or malformed");
    if (root.fields.count("ipc") && !curve_of(root, "ipc", m.ipc)) return fail("the IPC curve is malformed");
    if (root.fields.count("pack_device_wide") && (!grid_of(root, "pack_device_wide", m.pack_device_wide) ||
                                                  !grid_of(root, "unpack_device_wide", m.unpack_device_wide)))
      return fail("a wide-pitch grid is malformed");
  }
  return m;
}

}  // namespace dtmpi::transport
