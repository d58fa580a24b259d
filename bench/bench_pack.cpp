// CPU MPI_Pack benchmark: the system MPI's MPI_Pack (PMPI_Pack) and dtmpi's
// (MPI_Pack, interposed) on the same buffers in the same run, with memcpy of
// the packed byte count as the hardware limit.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "timing.hpp"

namespace dtmpi::bench {

namespace {

struct Case {
  std::string name;
  MPI_Datatype type;  // committed
  int64_t block;      // contiguous block bytes (0: mixed)
  int64_t pitch = 0;  // 2D vector layouts: bytes between blocks (enables the touch bound)
};

struct Row {
  std::string name;
  int64_t packed, block;
  double sys_s, ours_s, memcpy_s;
  double touch_s;  // reading one byte at each end of every block: no packer can be faster
};

int64_t span_bytes(MPI_Datatype t) {
  MPI_Aint lb, ext;
  MPI_Type_get_true_extent(t, &lb, &ext);
  return lb + ext;
}

void run_case(const Case& c, std::vector<Row>& rows, int64_t max_span) {
  int size = 0;
  MPI_Type_size(c.type, &size);
  const int64_t span = span_bytes(c.type);
  if (span > max_span) {
    std::printf("%-40s skipped: touches %.1f GiB (> limit)\n", c.name.c_str(), span / 1073741824.0);
    return;
  }
  std::vector<char> src(static_cast<size_t>(span)), out(static_cast<size_t>(size)), ref(out.size());
  for (size_t i = 0; i < src.size(); i += 4096) src[i] = static_cast<char>(i);
  auto sys = [&] {
    int pos = 0;
    PMPI_Pack(src.data(), 1, c.type, ref.data(), size, &pos, MPI_COMM_SELF);
  };
  auto ours = [&] {
    int pos = 0;
    MPI_Pack(src.data(), 1, c.type, out.data(), size, &pos, MPI_COMM_SELF);
  };
  std::vector<char> a(static_cast<size_t>(size)), b(static_cast<size_t>(size));
  auto copy = [&] { std::memcpy(b.data(), a.data(), a.size()); };
  // The memory bound of a sparse layout: every block's cache lines must be
  // read, whatever the packer; small blocks far apart cost a line each.
  volatile char sink = 0;
  auto touch = [&] {
    char acc = 0;
    const int64_t nblk = c.block > 0 ? size / c.block : 0;
    for (int64_t i = 0; i < nblk; ++i) acc ^= src[i * c.pitch] ^ src[i * c.pitch + c.block - 1];
    sink = acc;
  };
  const double min_s = size >= (1 << 22) ? 0.04 : 0.01;
  std::vector<std::function<void()>> ops{sys, ours, copy};
  if (c.pitch > 0) ops.push_back(touch);
  auto t = time_interleaved(ops, min_s);
  Row r{c.name, size, c.block, t[0].median_s, t[1].median_s, t[2].median_s, c.pitch > 0 ? t[3].median_s : 0.0};
  if (std::memcmp(out.data(), ref.data(), out.size()) != 0) {
    std::printf("%-40s PACKED BYTES DIFFER from the system MPI\n", c.name.c_str());
    std::exit(1);
  }
  const double mb = static_cast<double>(size) / 1048576.0;
  std::printf("%-40s %9lld %6lld %11.0f %11.0f %7.2fx %11.0f %6.0f%% %8s\n", r.name.c_str(),
              static_cast<long long>(r.packed), static_cast<long long>(r.block), mb / r.sys_s,
              mb / r.ours_s, r.sys_s / r.ours_s, mb / r.memcpy_s, 100 * r.memcpy_s / r.ours_s,
              r.touch_s > 0 ? (std::to_string(static_cast<int>(100 * r.touch_s / r.ours_s)) + "%").c_str() : "-");
  std::fflush(stdout);
  rows.push_back(r);
}

MPI_Datatype commit(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

std::string human(int64_t b) {
  char s[32];
  if (b >= (1 << 20))
    std::snprintf(s, sizeof s, "%lldMiB", static_cast<long long>(b >> 20));
  else if (b >= 1024)
    std::snprintf(s, sizeof s, "%lldKiB", static_cast<long long>(b >> 10));
  else
    std::snprintf(s, sizeof s, "%lldB", static_cast<long long>(b));
  return s;
}

}  // namespace

int bench_pack(int argc, char** argv) {
  bool quick = false;
  std::string filter;  // --filter SUBSTR: only cases whose name contains it
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
  }
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me != 0) return 0;
  const int64_t max_span = int64_t{3} << 30;
  std::vector<int64_t> objects = quick ? std::vector<int64_t>{1024, 1 << 20}
                                       : std::vector<int64_t>{1024, 64 << 10, 1 << 20, 4 << 20, 64 << 20};
  std::vector<int64_t> blocks = quick ? std::vector<int64_t>{1, 16, 256}
                                      : std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
  std::printf("%-40s %9s %6s %11s %11s %8s %11s %7s %8s\n", "case (pitch 512 B, or 2x block)", "packed B",
              "block", "system MB/s", "dtmpi MB/s", "speedup", "memcpy MB/s", "of mcpy", "of touch");
  std::vector<Row> rows;
  std::vector<Case> cases;
  for (int64_t obj : objects) {
    for (int64_t b : blocks) {
      if (b > obj) continue;
      const int64_t pitch = std::max<int64_t>(512, 2 * b);
      const int nblk = static_cast<int>(obj / b);
      MPI_Datatype v;
      MPI_Type_vector(nblk, static_cast<int>(b), static_cast<int>(pitch), MPI_BYTE, &v);
      cases.push_back({"2D vector " + human(obj) + " blk " + human(b), commit(v), b, pitch});
      if (!quick && (b == 1 || b == 16 || b == 256)) {
        // the same object as a 3D subarray: rows of 64 blocks in planes
        const int rows3 = std::min(64, nblk), planes = std::max(1, nblk / rows3);
        int sizes[3] = {planes, rows3 * 2, static_cast<int>(pitch)};
        int subs[3] = {planes, rows3, static_cast<int>(b)}, starts[3] = {0, 0, 0};
        MPI_Datatype s;
        MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_BYTE, &s);
        cases.push_back({"3D subarray " + human(obj) + " blk " + human(b), commit(s), b});
      }
    }
  }
  // irregular indexed: varying block lengths of doubles
  for (int64_t obj : {int64_t{64} << 10, int64_t{4} << 20}) {
    const int n = static_cast<int>(obj / 8 / 3);
    std::vector<int> bl(n), di(n);
    int at = 0;
    for (int i = 0; i < n; ++i) {
      bl[i] = 1 + (i % 5);
      di[i] = at;
      at += bl[i] + 3 + (i % 7);
    }
    MPI_Datatype t;
    MPI_Type_indexed(n, bl.data(), di.data(), MPI_DOUBLE, &t);
    cases.push_back({"indexed irregular " + human(obj), commit(t), 0});
  }
  // struct {double, int, int, char} resized to 24, x N
  {
    int sbl[3] = {1, 2, 1};
    MPI_Aint sd[3] = {0, 8, 16};
    MPI_Datatype st[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR}, s, r, t;
    MPI_Type_create_struct(3, sbl, sd, st, &s);
    MPI_Type_create_resized(s, 0, 24, &r);
    MPI_Type_contiguous(100000, r, &t);
    cases.push_back({"struct{d,i,i,c}x100000", commit(t), 17});
    MPI_Type_free(&s);
    MPI_Type_free(&r);
  }
  // 3D halo faces of a radius-3 stencil, 8 double quantities, 64^3 and 256^3
  for (int n : quick ? std::vector<int>{64} : std::vector<int>{64, 256}) {
    const int m = n + 6;
    for (int axis = 0; axis < 3; ++axis) {
      int gs[4] = {m, m, m, 8}, ss[4] = {n, n, n, 8}, s0[4] = {3, 3, 3, 0};
      ss[axis] = 3;
      MPI_Datatype t;
      MPI_Type_create_subarray(4, gs, ss, s0, MPI_ORDER_C, MPI_DOUBLE, &t);
      const char* ax = axis == 0 ? "z" : axis == 1 ? "y" : "x";
      cases.push_back({"halo face " + std::string(ax) + " " + std::to_string(n) + "^3 r3 q8", commit(t),
                       axis == 2 ? 192 : n * 64});
    }
  }
  // the regions of dtmpi-bench halo's layout ([quantity][z][y][x], rows padded
  // to 512 B), radius 3, 8 quantities: at 32^3 the halo's CPU exchange sat at
  // parity with the system MPI (bench/results/halo-cpu-*)
  for (int n : quick ? std::vector<int>{32} : std::vector<int>{32, 128}) {
    const int r = 3, m = n + 2 * r, row = (m * 8 + 511) / 512 * 512;
    auto region = [&](std::array<int, 3> len, std::array<int, 3> lo) {  // x, y, z in cells
      const int sizes[3] = {m, m, row}, sub[3] = {len[2], len[1], len[0] * 8}, start[3] = {lo[2], lo[1], lo[0] * 8};
      MPI_Datatype one, all;
      MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_BYTE, &one);
      MPI_Type_create_hvector(8, 1, MPI_Aint{row} * m * m, one, &all);
      MPI_Type_free(&one);
      return commit(all);
    };
    cases.push_back({"halo " + std::to_string(n) + "^3 x-face (pitched)", region({r, n, n}, {r, r, r}), 24});
    cases.push_back({"halo " + std::to_string(n) + "^3 y-face (pitched)", region({n, r, n}, {r, r, r}), 8 * n});
    cases.push_back({"halo " + std::to_string(n) + "^3 z-face (pitched)", region({n, n, r}, {r, r, r}), 8 * n});
    cases.push_back({"halo " + std::to_string(n) + "^3 x-edge (pitched)", region({r, r, n}, {r, r, r}), 24});
    cases.push_back({"halo " + std::to_string(n) + "^3 corner (pitched)", region({r, r, r}, {r, r, r}), 24});
  }
  for (auto& c : cases) {
    if (filter.empty() || c.name.find(filter) != std::string::npos) run_case(c, rows, max_span);
    MPI_Type_free(&c.type);
  }
  // summary against the targets
  int slower = 0, small_total = 0, small_2x = 0, small_bound = 0, big_total = 0, big_half = 0;
  for (const auto& r : rows) {
    const double ratio = r.sys_s / r.ours_s;
    if (ratio < 0.95) ++slower;
    const bool at_bound = r.touch_s > 0 && r.ours_s <= 1.25 * r.touch_s;  // within 25% of the line reads
    if (r.block > 0 && r.block <= 16) small_total++, small_2x += ratio >= 2.0, small_bound += ratio < 2.0 && at_bound;
    if (r.block >= 256) big_total++, big_half += r.memcpy_s / r.ours_s >= 0.5;
  }
  std::printf("\nsummary: %zu cases; slower than the system MPI (<0.95x): %d; blocks <= 16 B at >= 2x: %d/%d "
              "(and %d more within 25%% of the touch bound, where 2x cannot exist); "
              "blocks >= 256 B at >= 50%% of memcpy: %d/%d\n",
              rows.size(), slower, small_2x, small_total, small_bound, big_half, big_total);
  std::printf("'of touch': the time to read one byte at each end of every block (the cache lines any packer "
              "must load) as a share of dtmpi's time.\n");
  return 0;
}

}  // namespace dtmpi::bench
