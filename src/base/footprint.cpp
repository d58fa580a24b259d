#include "base/footprint.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace dtmpi::footprint {
namespace {

struct Sources {
  std::mutex mu;
  std::vector<Source> list;
};

Sources& sources() {
  static auto* s = new Sources;  // never destroyed: sources register during static initialization
  return *s;
}

std::atomic<int> g_world_ranks{1};

std::string bytes_text(int64_t b) {
  char buf[48];
  if (b >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

}  // namespace

bool add_source(Source source) {
  auto& s = sources();
  std::lock_guard lock(s.mu);
  s.list.push_back(source);
  return true;
}

void set_world_ranks(int ranks) { g_world_ranks.store(ranks > 0 ? ranks : 1); }
int world_ranks() { return g_world_ranks.load(); }

std::vector<Part> parts() {
  std::vector<Source> list;
  {
    auto& s = sources();
    std::lock_guard lock(s.mu);
    list = s.list;
  }
  std::vector<Part> out;
  for (Source source : list) source(out);
  return out;
}

int64_t total_bytes(const std::vector<Part>& parts, int64_t ranks) {
  if (ranks <= 0) ranks = world_ranks();
  int64_t sum = 0;
  for (const auto& p : parts) sum += p.bytes_at(ranks);
  return sum;
}

std::string describe(int64_t scaled_ranks) {
  const auto all = parts();
  const int64_t n = world_ranks();
  int64_t per_rank = 0;
  for (const auto& p : all) per_rank += p.per_rank;
  std::string text = "structures " + bytes_text(total_bytes(all, n)) + " at " + std::to_string(n) + " ranks, " +
                     bytes_text(total_bytes(all, scaled_ranks)) + " at " + std::to_string(scaled_ranks) + " (" +
                     std::to_string(per_rank) + " B per rank):";
  for (const auto& p : all) {
    const int64_t b = p.bytes_at(n);
    if (b < 16) continue;  // an empty hash table (its one bucket)
    text += std::string(" ") + p.name + " " + bytes_text(b);
    if (p.per_rank) text += " (" + std::to_string(p.per_rank) + " B/rank)";
    text += ";";
  }
  if (text.back() == ';') text.pop_back();
  return text;
}

}  // namespace dtmpi::footprint
