// coll/tuning_table.hpp
#include "coll/tuning_table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/json.hpp"
#include "coll/model.hpp"
#include "runtime/config.hpp"

namespace dtmpi::coll {

namespace {

struct Named {
  Algorithm a;
  const char* name;
};
// The names DTMPI_COLL takes (select.cpp parses the same list).
constexpr Named kAlgorithms[] = {
    {Algorithm::kSystem, "system"},          {Algorithm::kDissemination, "dissemination"},
    {Algorithm::kFlat, "flat"},              {Algorithm::kBinomial, "binomial"},
    {Algorithm::kRecursiveDoubling, "recdbl"}, {Algorithm::kReduceScatterAllgather, "rsag"},
    {Algorithm::kTree, "tree"},              {Algorithm::kRing, "ring"},
    {Algorithm::kPairwise, "pairwise"},      {Algorithm::kLinear, "linear"},
    {Algorithm::kKnomial4, "knomial4"},      {Algorithm::kKnomial8, "knomial8"},
    {Algorithm::kChain, "chain"},            {Algorithm::kChain4K, "chain4k"},
    {Algorithm::kChain16K, "chain16k"},            {Algorithm::kBruck, "bruck"},
    {Algorithm::kBruck4, "bruck4"},          {Algorithm::kKary2, "kary2"},
    {Algorithm::kKary4, "kary4"},            {Algorithm::kKary8, "kary8"},
};
// In CollOpKind's order.
constexpr const char* kOps[] = {"barrier", "bcast",    "allreduce",            "reduce", "allgather", "gather",
                                "scatter", "alltoall", "reduce_scatter_block", "scan",   "exscan",
                                "allgatherv", "gatherv", "scatterv", "alltoallv", "reduce_scatter"};
static_assert(sizeof kOps / sizeof kOps[0] == static_cast<size_t>(CollOpKind::kCount));

double log2_ratio(double a, double b) { return std::fabs(std::log2(std::max(a, 1.0) / std::max(b, 1.0))); }

// A size's class: its bit length (0 for 0, 4 for 8..15, ...). Lookups compare
// classes, so that a memo by class (select.cpp) gives the lookup's answer.
int size_class(int64_t bytes) {
  int c = 0;
  for (uint64_t b = static_cast<uint64_t>(std::max<int64_t>(bytes, 0)); b; b >>= 1) ++c;
  return c;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

}  // namespace

const char* op_name(CollOpKind op) {
  const auto i = static_cast<size_t>(op);
  return i < sizeof kOps / sizeof kOps[0] ? kOps[i] : "?";
}

std::optional<CollOpKind> op_from_name(const std::string& s) {
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; ++i)
    if (s == kOps[i]) return static_cast<CollOpKind>(i);
  return std::nullopt;
}

const char* algorithm_name(Algorithm a) {
  for (const Named& n : kAlgorithms)
    if (n.a == a) return n.name;
  return "?";
}

std::optional<Algorithm> algorithm_from_name(const std::string& s) {
  for (const Named& n : kAlgorithms)
    if (s == n.name) return n.a;
  return std::nullopt;
}

std::string to_json(const TuningTable& t) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "{\n  \"dtmpi_coll_table\": 1,\n  \"library_version\": \"%s\",\n  \"host\": \"%s\",\n  \"mpi\": \"%s\",\n"
                "  \"loggp_us\": {\"L\": %.6g, \"o\": %.6g, \"g\": %.6g, \"G_per_byte\": %.6g},\n  \"entries\": [\n",
                escape(t.library_version).c_str(), escape(t.host).c_str(), escape(t.mpi).c_str(), t.loggp.L,
                t.loggp.o, t.loggp.g, t.loggp.G);
  out += line;
  for (size_t i = 0; i < t.entries.size(); ++i) {
    const TuningEntry& e = t.entries[i];
    std::snprintf(line, sizeof line,
                  "    {\"op\": \"%s\", \"bytes\": %lld, \"ranks\": %d, \"ranks_per_node\": %d, \"memory\": \"%s\", "
                  "\"in_place\": %s, \"in_flight\": %s, \"algorithm\": \"%s\", \"us\": %.3f, \"system_us\": %.3f}%s\n",
                  op_name(e.key.op), static_cast<long long>(e.key.bytes), e.key.ranks, e.key.ranks_per_node,
                  e.key.device ? "device" : "host", e.key.in_place ? "true" : "false",
                  e.key.in_flight ? "true" : "false", algorithm_name(e.algorithm), e.us, e.system_us,
                  i + 1 < t.entries.size() ? "," : "");
    out += line;
  }
  out += "  ]\n}\n";
  return out;
}

bool from_json(const std::string& text, TuningTable& out, std::string* why) {
  auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  json::Value v;
  if (!json::parse(text, v) || v.kind != json::Value::kObject) return fail("not JSON");
  const json::Value* format = json::field(v, "dtmpi_coll_table", json::Value::kNumber);
  if (!format || format->number != 1) return fail("not a dtmpi collective table (format 1)");
  TuningTable t;
  if (const auto* s = json::field(v, "library_version", json::Value::kString)) t.library_version = s->text;
  if (const auto* s = json::field(v, "host", json::Value::kString)) t.host = s->text;
  if (const auto* s = json::field(v, "mpi", json::Value::kString)) t.mpi = s->text;
  if (const auto* p = json::field(v, "loggp_us", json::Value::kObject)) {
    auto num = [&](const char* n) {
      const json::Value* x = json::field(*p, n, json::Value::kNumber);
      return x ? x->number : 0.0;
    };
    t.loggp = LogGP{num("L"), num("o"), num("g"), num("G_per_byte")};
  }
  const json::Value* entries = json::field(v, "entries", json::Value::kArray);
  if (!entries) return fail("no entries");
  for (const json::Value& e : entries->items) {
    const auto* op = json::field(e, "op", json::Value::kString);
    const auto* alg = json::field(e, "algorithm", json::Value::kString);
    const auto* bytes = json::field(e, "bytes", json::Value::kNumber);
    const auto* ranks = json::field(e, "ranks", json::Value::kNumber);
    if (!op || !alg || !bytes || !ranks) return fail("an entry without op, algorithm, bytes or ranks");
    TuningEntry te;
    const auto o = op_from_name(op->text);
    const auto a = algorithm_from_name(alg->text);
    if (!o || !a) return fail("an entry names an unknown operation or algorithm");
    // a table from another version must not hand an operation an algorithm
    // that does not implement it (it would fall back silently on every call)
    const auto implements = algorithms_for(*o);
    if (*a != Algorithm::kSystem && std::find(implements.begin(), implements.end(), *a) == implements.end())
      return fail("an entry names an algorithm its operation does not have");
    if (bytes->number < 0 || ranks->number < 1) return fail("an entry with a negative size or no ranks");
    te.key.op = *o;
    te.algorithm = *a;
    te.key.bytes = static_cast<int64_t>(bytes->number);
    te.key.ranks = static_cast<int>(ranks->number);
    const auto* rpn = json::field(e, "ranks_per_node", json::Value::kNumber);
    te.key.ranks_per_node = rpn ? static_cast<int>(rpn->number) : te.key.ranks;
    const auto* mem = json::field(e, "memory", json::Value::kString);
    te.key.device = mem && mem->text == "device";
    const auto* ip = json::field(e, "in_place", json::Value::kBool);
    te.key.in_place = ip && ip->boolean;
    const auto* fl = json::field(e, "in_flight", json::Value::kBool);
    te.key.in_flight = fl && fl->boolean;
    if (const auto* us = json::field(e, "us", json::Value::kNumber)) te.us = us->number;
    if (const auto* us = json::field(e, "system_us", json::Value::kNumber)) te.system_us = us->number;
    t.entries.push_back(te);
  }
  out = std::move(t);
  return true;
}

int bytes_class(int64_t bytes) { return size_class(bytes); }

const TuningEntry* closest(const TuningTable& t, const TuningKey& k) {
  // the flags first: an entry with the same ones wins over any without
  auto flags_miss = [&](const TuningKey& e) {
    return (e.device != k.device) * 4 + (e.in_place != k.in_place) * 2 + (e.in_flight != k.in_flight);
  };
  const TuningEntry* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const TuningEntry& e : t.entries) {
    if (e.key.op != k.op) continue;
    const double cost = flags_miss(e.key) * 1000.0 + log2_ratio(e.key.ranks, k.ranks) * 4 +
                        log2_ratio(e.key.ranks_per_node, k.ranks_per_node) * 2 +
                        std::abs(size_class(e.key.bytes) - size_class(k.bytes));
    if (cost < best_cost) {
      best_cost = cost;
      best = &e;
    }
  }
  return best;
}

std::optional<Algorithm> lookup(const TuningTable& t, const TuningKey& k) {
  const TuningEntry* e = closest(t, k);
  if (!e) return std::nullopt;
  return e->algorithm;
}

std::string default_table_path() {
  const std::string& set = runtime::config().coll_table;
  if (!set.empty()) return set;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string h = host;
  for (char& c : h)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return runtime::config().cache_dir + "/coll-" + h + ".json";
}

}  // namespace dtmpi::coll
