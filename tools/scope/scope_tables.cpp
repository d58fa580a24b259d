// The tables printed after a run (and written into the summary file).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "scope.hpp"
#include "scope_report.hpp"

namespace dtmpi::scope {
namespace {

bool is_transfer(const Result& r) { return r.arg_name == "bytes" && r.error.empty() && r.gbps > 0; }

const Result* find(const std::vector<Result>& rs, const std::string& row, int64_t arg, int threads = 1) {
  for (const auto& r : rs)
    if (r.row == row && r.arg == arg && r.threads == threads && r.error.empty()) return &r;
  return nullptr;
}

// rows in the order they ran
std::vector<std::string> rows_of(const std::vector<Result>& rs, bool (*keep)(const Result&)) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& r : rs)
    if (keep(r) && seen.insert(r.row).second) out.push_back(r.row);
  return out;
}

void nominal_header(FILE* f) {
  const Machine& m = machine();
  if (m.gpus == 0) {
    std::fprintf(f, "%s: the GPU rows were skipped\n", m.no_gpu.c_str());
    return;
  }
  auto one = [&](const char* what, double v, const std::string& how) {
    if (v > 0)
      std::fprintf(f, "  %-7s %8.1f GB/s per direction (%s)\n", what, v, how.c_str());
    else
      std::fprintf(f, "  %-7s unknown (%s)\n", what, how.empty() ? "not detected" : how.c_str());
  };
  std::fprintf(f, "nominal figures of GPU %d%s:\n", options().gpu,
               m.gpu_names.empty() ? "" : (" (" + m.gpu_names[static_cast<size_t>(options().gpu)] + ")").c_str());
  one("HBM", m.hbm, m.hbm_how);
  one("PCIe", m.pcie, m.pcie_how);
  one("NVLink", m.nvlink, m.nvlink_how);
}

void peak_table(FILE* f, const std::vector<Result>& rs) {
  std::fprintf(f, "\n== bandwidth: the best median over sizes, next to the link's nominal figure\n");
  std::fprintf(f, "%-44s %12s %10s %18s %8s\n", "row", "peak GB/s", "at", "nominal GB/s", "of it");
  for (const auto& row : rows_of(rs, is_transfer)) {
    const Result* best = nullptr;
    for (const auto& r : rs)
      if (r.row == row && is_transfer(r) && (!best || r.gbps > best->gbps)) best = &r;
    std::string what;
    const double nom = nominal_for(row, &what);
    char nominal[64] = "-", share[16] = "-";
    if (nom > 0) {
      std::snprintf(nominal, sizeof nominal, "%.1f %s", nom, what.c_str());
      std::snprintf(share, sizeof share, "%.0f%%", 100 * best->gbps / nom);
    }
    std::fprintf(f, "%-44s %12.3f %10s %18s %8s\n", row.c_str(), best->gbps,
                 bytes_text(static_cast<double>(best->arg)).c_str(), nominal, share);
  }
}

void naive_table(FILE* f, const std::vector<Result>& rs) {
  std::fprintf(f,
               "\n== the method (CUDA events; busy-wait start for bidir) vs plain cudaMemcpy + wall clock (naive/...)\n"
               "%-34s %10s %13s %13s %14s\n",
               "row", "size", "method GB/s", "naive GB/s", "naive time x");
  int shown = 0;
  for (const auto& naive_row : rows_of(rs, is_transfer)) {
    if (naive_row.rfind("naive/", 0) != 0) continue;
    const std::string row = naive_row.substr(6);
    std::vector<int64_t> sizes;
    for (const auto& r : rs)
      if (r.row == naive_row && is_transfer(r)) sizes.push_back(r.arg);
    if (sizes.empty()) continue;
    std::set<int64_t> pick;
    for (int64_t want : {int64_t{1}, int64_t{1} << 10, int64_t{1} << 16, int64_t{1} << 20, int64_t{1} << 24, sizes.back()}) {
      // the measured size nearest `want` (in log)
      int64_t best = sizes[0];
      for (int64_t s : sizes)
        if (std::fabs(std::log(double(s) / double(want))) < std::fabs(std::log(double(best) / double(want)))) best = s;
      pick.insert(best);
    }
    for (int64_t s : pick) {
      const Result* m = find(rs, row, s);
      const Result* n = find(rs, naive_row, s);
      if (!m || !n) continue;
      std::fprintf(f, "%-34s %10s %13.3f %13.3f %13.2fx\n", row.c_str(), bytes_text(double(s)).c_str(), m->gbps,
                   n->gbps, n->gbps > 0 ? m->gbps / n->gbps : 0);
      ++shown;
    }
  }
  if (!shown) std::fprintf(f, "(no pair of rows measured)\n");
}

void cpu_table(FILE* f, const std::vector<Result>& rs) {
  const Machine& m = machine();
  const double link = m.nvlink > 0 ? m.nvlink : m.pcie;
  std::fprintf(f, "\n== CPU cost of CUDA calls (thesis Table 3.2)%s\n",
               link > 0 ? (" and the bytes the link could move meanwhile (" + std::string(m.nvlink > 0 ? "NVLink" : "PCIe") +
                           " nominal)").c_str()
                        : "");
  bool any = false;
  for (const auto& r : rs) {
    if (r.row.rfind("cpu/", 0) != 0 || r.threads > 1 || !r.error.empty()) continue;
    if (r.row.find("threaded") != std::string::npos) continue;
    const std::string arg = r.arg_name.empty() ? "" : r.arg_name + ":" + std::to_string(r.arg);
    std::fprintf(f, "%-44s %-10s %10.2f us", r.row.c_str(), arg.c_str(), r.median_s * 1e6);
    if (link > 0) std::fprintf(f, "  = %s", bytes_text(std::round(r.median_s * link * 1e9)).c_str());
    std::fprintf(f, "\n");
    any = true;
  }
  for (const auto& r : rs)
    if (r.row.find("threaded") != std::string::npos && r.error.empty() && r.items_per_s > 0) {
      std::fprintf(f, "%-44s threads:%-3d %8.3f M calls/s in all\n", r.row.c_str(), r.threads, r.items_per_s / 1e6);
      any = true;
    }
  // graphs: one launch of N captured kernels vs N launches
  for (const auto& r : rs) {
    if (r.row.rfind("cpu/graph-launch/", 0) != 0 || !r.error.empty()) continue;
    const std::string what = r.row.substr(std::string("cpu/graph-launch/").size());
    if (const Result* d = find(rs, "cpu/graph-direct/" + what, r.arg))
      std::fprintf(f, "graph of %lld %s: launch %.2f us vs %.2f us issued one by one (%.1fx)\n",
                   static_cast<long long>(r.arg), what.c_str(), r.median_s * 1e6, d->median_s * 1e6,
                   r.median_s > 0 ? d->median_s / r.median_s : 0);
  }
  if (!any) std::fprintf(f, "(none measured)\n");
}

void dtmpi_table(FILE* f, const std::vector<Result>& rs) {
  std::fprintf(f, "\n== what dtmpi adds\n");
  bool any = false;
  for (const auto& r : rs) {
    if (r.row.rfind("dtmpi/", 0) != 0 || !r.error.empty()) continue;
    const auto slash = r.row.rfind('/');
    const std::string head = r.row.substr(0, slash), who = r.row.substr(slash + 1);
    if (who == "system") continue;
    std::fprintf(f, "%-44s %10.1f ns", r.row.c_str(), r.median_s * 1e9);
    if (who == "interposed")
      if (const Result* s = find(rs, head + "/system", r.arg))
        std::fprintf(f, "  (system MPI %.1f ns: dtmpi adds %+.1f ns)", s->median_s * 1e9, (r.median_s - s->median_s) * 1e9);
    std::fprintf(f, "\n");
    any = true;
  }
  if (!any) std::fprintf(f, "(none measured)\n");
}

}  // namespace

void print_tables(FILE* f, const std::vector<Result>& rs) {
  nominal_header(f);
  peak_table(f, rs);
  naive_table(f, rs);
  cpu_table(f, rs);
  dtmpi_table(f, rs);
  int skipped = 0, failed = 0;
  std::map<std::string, int> reasons;
  for (const auto& r : rs) {
    if (r.skipped()) ++skipped, ++reasons[r.error];
    if (r.failed()) ++failed;
  }
  std::fprintf(f, "\n%zu benchmarks: %zu measured, %d skipped, %d failed\n", rs.size(),
               rs.size() - static_cast<size_t>(skipped + failed), skipped, failed);
  for (const auto& [why, n] : reasons) std::fprintf(f, "  %d %s\n", n, why.c_str());
  for (const auto& r : rs)
    if (r.failed()) std::fprintf(f, "  FAILED %s: %s\n", r.name.c_str(), r.error.c_str());
}

}  // namespace dtmpi::scope
