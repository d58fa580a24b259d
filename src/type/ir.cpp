#include "type/ir.hpp"

#include <sstream>

namespace dtmpi::type {

TypeIR TypeIR::dense(int64_t off, int64_t len) {
  TypeIR n;
  n.kind = Kind::Dense;
  n.off = off;
  n.len = len;
  return n;
}

TypeIR TypeIR::stream(int64_t off, int64_t count, int64_t stride, TypeIR child) {
  TypeIR n;
  n.kind = Kind::Stream;
  n.off = off;
  n.count = count;
  n.stride = stride;
  n.children.push_back(std::move(child));
  return n;
}

TypeIR TypeIR::seq(std::vector<TypeIR> items) {
  TypeIR n;
  n.kind = Kind::Seq;
  n.children = std::move(items);
  return n;
}

int64_t packed_size(const TypeIR& ir) {
  switch (ir.kind) {
    case TypeIR::Kind::Dense: return ir.len;
    case TypeIR::Kind::Stream: return ir.count * packed_size(ir.child());
    case TypeIR::Kind::Seq: {
      int64_t s = 0;
      for (const auto& c : ir.children) s += packed_size(c);
      return s;
    }
  }
  return 0;
}

int64_t node_count(const TypeIR& ir) {
  int64_t n = 1;
  for (const auto& c : ir.children) n += node_count(c);
  return n;
}

bool same_shape(const TypeIR& a, const TypeIR& b) {
  if (a.kind != b.kind || a.len != b.len || a.count != b.count || a.stride != b.stride ||
      a.children.size() != b.children.size())
    return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!(a.children[i] == b.children[i])) return false;
  return true;
}

bool operator==(const TypeIR& a, const TypeIR& b) { return a.off == b.off && same_shape(a, b); }

static void print(std::ostringstream& os, const TypeIR& ir, int depth) {
  os << std::string(2 * depth, ' ');
  switch (ir.kind) {
    case TypeIR::Kind::Dense: os << "Dense(off=" << ir.off << ", len=" << ir.len << ")\n"; break;
    case TypeIR::Kind::Stream:
      os << "Stream(off=" << ir.off << ", count=" << ir.count << ", stride=" << ir.stride << ")\n";
      break;
    case TypeIR::Kind::Seq:
      os << "Seq(off=" << ir.off << ", items=" << ir.children.size() << ")\n";
      break;
  }
  constexpr size_t kMaxShown = 8;
  for (size_t i = 0; i < ir.children.size(); ++i) {
    if (i == kMaxShown && ir.children.size() > kMaxShown + 1) {
      os << std::string(2 * depth + 2, ' ') << "... " << ir.children.size() - kMaxShown - 1
         << " more\n";
      i = ir.children.size() - 1;
    }
    print(os, ir.children[i], depth + 1);
  }
}

std::string to_string(const TypeIR& ir) {
  std::ostringstream os;
  print(os, ir, 0);
  return os.str();
}

namespace {
struct RunMerger {
  const std::function<void(int64_t, int64_t)>& fn;
  int64_t start = 0, len = 0;
  void add(int64_t off, int64_t n) {
    if (n == 0) return;
    if (len > 0 && start + len == off) {
      len += n;
      return;
    }
    if (len > 0) fn(start, len);
    start = off;
    len = n;
  }
  void flush() {
    if (len > 0) fn(start, len);
    len = 0;
  }
};

void walk(const TypeIR& ir, int64_t base, RunMerger& m) {
  const int64_t at = base + ir.off;
  switch (ir.kind) {
    case TypeIR::Kind::Dense: m.add(at, ir.len); break;
    case TypeIR::Kind::Stream:
      for (int64_t i = 0; i < ir.count; ++i) walk(ir.child(), at + i * ir.stride, m);
      break;
    case TypeIR::Kind::Seq:
      for (const auto& c : ir.children) walk(c, at, m);
      break;
  }
}
}  // namespace

void for_each_run(const TypeIR& ir, const std::function<void(int64_t, int64_t)>& fn) {
  RunMerger m{fn};
  walk(ir, 0, m);
  m.flush();
}

}  // namespace dtmpi::type
