// dtmpi-memory-workload: a plain MPI program (not linked with dtmpi) whose
// per-rank peak memory is compared run as it is and with libdtmpi preloaded
// (scripts/memory-per-rank.sh runs both over 2-64 ranks; issue 28).
//
// The workload is a halo exchange like bench_halo's (a periodic 3D process
// grid, 26 neighbours, every region a subarray datatype repeated over the
// quantities by an hvector) by MPI_Isend/MPI_Irecv and by
// MPI_Neighbor_alltoallw on a dist-graph communicator, MPI_Pack/MPI_Unpack of
// the faces, and a few collectives (Allreduce, Bcast, Alltoallv, Barrier).
// Ghost cells are checked after every exchange: a wrong value fails the run.
//
// Rank 0 prints one line of the peak resident set (VmHWM) over the ranks (and
// medians of the resident set after MPI_Init and of its anonymous, file and
// shared-memory parts at the end) and,
// where dtmpi is loaded, the bytes its own structures hold (dtmpi_memory_bytes,
// looked up at run time) now and scaled to 3072 ranks.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

const std::vector<dtmpi::tools::Option> kOptions = {
    {"--size", "N", "block of N^3 cells per rank (default 24)"},
    {"--rounds", "K", "exchanges of each kind (default 5)"},
    {"--detail", nullptr, "rank 0 also prints dtmpi's structures one by one (dtmpi_memory)"},
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: mpiexec -n N dtmpi-memory-workload [options]\n"
               "\n"
               "A plain MPI program (never linked with dtmpi): a 3D halo exchange of subarray datatypes\n"
               "(isend/irecv, neighbor_alltoallw, pack/unpack) and a few collectives, then rank 0 prints\n"
               "the peak resident set of every rank (VmHWM: min, median, max in KiB) and, where libdtmpi\n"
               "is preloaded, the bytes of dtmpi's own structures now and scaled to 3072 ranks.\n"
               "Run it plain and with LD_PRELOAD=libdtmpi-<mpi>.so: scripts/memory-per-rank.sh.\n"
               "\n"
               "options:\n");
  dtmpi::tools::print_options(f, kOptions);
}

// VmHWM / VmRSS of this process in KiB, from /proc/self/status.
long status_kib(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') kib = std::atol(line + n + 1);
  std::fclose(f);
  return kib;
}

constexpr int kRadius = 2, kQuantities = 4;

struct Halo {
  int n = 24;
  int edge() const { return n + 2 * kRadius; }
  MPI_Aint quantity_bytes() const { return MPI_Aint{edge()} * edge() * edge() * 8; }
  std::vector<double> data;
  std::vector<MPI_Datatype> send_types, recv_types;
  std::vector<int> dst, src;
  MPI_Comm cart = MPI_COMM_NULL, graph = MPI_COMM_NULL;
};

// One region of every quantity: d picks, per dim, the low shell (-1), the
// interior (0) or the high shell (+1), of the cells sent (`ghost` false) or
// of the ghost cells received.
MPI_Datatype region(const Halo& h, const std::array<int, 3>& d, bool ghost) {
  int sizes[3], sub[3], start[3];
  for (int k = 0; k < 3; ++k) {
    sizes[k] = h.edge();
    sub[k] = d[static_cast<size_t>(k)] == 0 ? h.n : kRadius;
    if (ghost)
      start[k] = d[static_cast<size_t>(k)] > 0 ? 0 : d[static_cast<size_t>(k)] < 0 ? h.n + kRadius : kRadius;
    else
      start[k] = d[static_cast<size_t>(k)] < 0 ? kRadius : d[static_cast<size_t>(k)] > 0 ? h.n : kRadius;
  }
  MPI_Datatype one, all;
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &one);
  MPI_Type_create_hvector(kQuantities, 1, h.quantity_bytes(), one, &all);
  MPI_Type_commit(&all);
  MPI_Type_free(&one);
  return all;
}

void setup(Halo& h, int size) {
  int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
  MPI_Dims_create(size, 3, dims);
  MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &h.cart);
  int me = 0, c[3];
  MPI_Comm_rank(h.cart, &me);
  MPI_Cart_coords(h.cart, me, 3, c);
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if (!dx && !dy && !dz) continue;
        const std::array<int, 3> d{dz, dy, dx};
        int to[3], from[3];
        for (int k = 0; k < 3; ++k) {
          to[k] = (c[k] + d[static_cast<size_t>(k)] + dims[k]) % dims[k];
          from[k] = (c[k] - d[static_cast<size_t>(k)] + dims[k]) % dims[k];
        }
        int t = 0, f = 0;
        MPI_Cart_rank(h.cart, to, &t);
        MPI_Cart_rank(h.cart, from, &f);
        h.dst.push_back(t);
        h.src.push_back(f);
        h.send_types.push_back(region(h, d, false));
        h.recv_types.push_back(region(h, d, true));  // filled by what travels in direction d
      }
  MPI_Dist_graph_create_adjacent(h.cart, 26, h.src.data(), MPI_UNWEIGHTED, 26, h.dst.data(), MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &h.graph);
  h.data.resize(static_cast<size_t>(h.quantity_bytes() / 8 * kQuantities));
}

// Every cell holds its owner's rank and quantity; a ghost region must hold
// its sender's. Returns the number of wrong regions.
int exchange_and_check(Halo& h, int kind, std::vector<char>& packed) {
  int me = 0;
  MPI_Comm_rank(h.cart, &me);
  const size_t per_q = h.data.size() / kQuantities;
  for (size_t i = 0; i < h.data.size(); ++i) h.data[i] = me * 10.0 + static_cast<double>(i / per_q);
  if (kind == 0) {
    std::vector<MPI_Request> reqs(52);
    for (int i = 0; i < 26; ++i) {
      MPI_Irecv(h.data.data(), 1, h.recv_types[static_cast<size_t>(i)], h.src[static_cast<size_t>(i)], i, h.cart,
                &reqs[static_cast<size_t>(i)]);
      MPI_Isend(h.data.data(), 1, h.send_types[static_cast<size_t>(i)], h.dst[static_cast<size_t>(i)], i, h.cart,
                &reqs[static_cast<size_t>(26 + i)]);
    }
    MPI_Waitall(52, reqs.data(), MPI_STATUSES_IGNORE);
  } else if (kind == 1) {
    std::vector<int> ones(26, 1);
    std::vector<MPI_Aint> zero(26, 0);
    MPI_Neighbor_alltoallw(h.data.data(), ones.data(), zero.data(), h.send_types.data(), h.data.data(), ones.data(),
                           zero.data(), h.recv_types.data(), h.graph);
  } else {  // pack each face, exchange the bytes, unpack
    int bytes = 0;
    MPI_Pack_size(1, h.send_types[0], h.cart, &bytes);
    int face = 0;
    for (int i = 0; i < 26; ++i) {
      MPI_Pack_size(1, h.send_types[static_cast<size_t>(i)], h.cart, &bytes);
      face = std::max(face, bytes);
    }
    packed.resize(static_cast<size_t>(face) * 52);
    std::vector<MPI_Request> reqs(52);
    for (int i = 0; i < 26; ++i) {
      int pos = 0;
      char* out = packed.data() + static_cast<size_t>(face) * static_cast<size_t>(26 + i);
      MPI_Pack(h.data.data(), 1, h.send_types[static_cast<size_t>(i)], out, face, &pos, h.cart);
      MPI_Irecv(packed.data() + static_cast<size_t>(face) * static_cast<size_t>(i), face, MPI_PACKED,
                h.src[static_cast<size_t>(i)], i, h.cart, &reqs[static_cast<size_t>(i)]);
      MPI_Isend(out, pos, MPI_PACKED, h.dst[static_cast<size_t>(i)], i, h.cart, &reqs[static_cast<size_t>(26 + i)]);
    }
    MPI_Waitall(52, reqs.data(), MPI_STATUSES_IGNORE);
    for (int i = 0; i < 26; ++i) {
      int pos = 0;
      MPI_Unpack(packed.data() + static_cast<size_t>(face) * static_cast<size_t>(i), face, &pos, h.data.data(), 1,
                 h.recv_types[static_cast<size_t>(i)], h.cart);
    }
  }
  // check one corner cell of each ghost region of each quantity
  int wrong = 0;
  for (int i = 0; i < 26; ++i) {
    std::vector<double> one(static_cast<size_t>(kQuantities) * static_cast<size_t>(h.n) * h.n * kRadius);
    int pos = 0;
    MPI_Pack(h.data.data(), 1, h.recv_types[static_cast<size_t>(i)], one.data(),
             static_cast<int>(one.size() * sizeof(double)), &pos, h.cart);
    const size_t cells = static_cast<size_t>(pos) / sizeof(double) / kQuantities;
    for (size_t q = 0; q < kQuantities; ++q)
      if (one[q * cells] != h.src[static_cast<size_t>(i)] * 10.0 + static_cast<double>(q)) ++wrong;
  }
  return wrong;
}

void collectives(int size) {
  double x = 1.0, sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  std::vector<char> block(4096, 1);
  MPI_Bcast(block.data(), static_cast<int>(block.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<int> counts(static_cast<size_t>(size), 8), displs(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) displs[static_cast<size_t>(i)] = 8 * i;
  std::vector<int> out(static_cast<size_t>(size) * 8, 2), in(out.size());
  MPI_Alltoallv(out.data(), counts.data(), displs.data(), MPI_INT, in.data(), counts.data(), displs.data(), MPI_INT,
                MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  dtmpi::tools::Args args;
  if (int rc = dtmpi::tools::parse("dtmpi-memory-workload", argc, argv, 1, kOptions, usage, args); rc >= 0) return rc;
  Halo h;
  h.n = std::atoi(args.get("--size", "24"));
  const int rounds = std::atoi(args.get("--rounds", "5"));
  if (h.n < kRadius || rounds < 1) {
    if (dtmpi::tools::launcher_rank() == 0)
      std::fprintf(stderr, "dtmpi-memory-workload: --size must be >= %d and --rounds >= 1\n", kRadius);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long after_init = status_kib("VmRSS");
  setup(h, size);
  std::vector<char> packed;
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int kind = 0; kind < 3; ++kind) wrong += exchange_and_check(h, kind, packed);
    collectives(size);
  }
  // dtmpi's accounting where it is loaded (looked up: this program does not link it)
  using MemoryBytes = long long (*)(int);
  using MemoryText = const char* (*)();
  auto bytes_at = reinterpret_cast<MemoryBytes>(dlsym(RTLD_DEFAULT, "dtmpi_memory_bytes"));
  auto text = reinterpret_cast<MemoryText>(dlsym(RTLD_DEFAULT, "dtmpi_memory"));
  // peak, and at the end: private (anonymous) pages, file-backed pages (code
  // of the libraries, shared by every rank) and shared memory (the MPI's segments)
  constexpr int kFields = 7;
  long long mine[kFields] = {status_kib("VmHWM"), after_init, status_kib("RssAnon"), status_kib("RssFile"),
                             status_kib("RssShmem"), bytes_at ? bytes_at(0) : -1, bytes_at ? bytes_at(3072) : -1};
  std::vector<long long> all(static_cast<size_t>(size) * kFields);
  MPI_Gather(mine, kFields, MPI_LONG_LONG, all.data(), kFields, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  int wrong_total = 0;
  MPI_Reduce(&wrong, &wrong_total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) {
    auto column = [&](int k) {
      std::vector<long long> v;
      for (int i = 0; i < size; ++i) v.push_back(all[static_cast<size_t>(i) * kFields + static_cast<size_t>(k)]);
      std::sort(v.begin(), v.end());
      return v;
    };
    const size_t mid = static_cast<size_t>(size) / 2;
    const auto hwm = column(0);
    std::printf("ranks %d %s: peak RSS KiB min %lld median %lld max %lld; after MPI_Init RSS %lld; at the end "
                "anon %lld file %lld shmem %lld",
                size, bytes_at ? "dtmpi" : "plain", hwm.front(), hwm[mid], hwm.back(), column(1)[mid],
                column(2)[mid], column(3)[mid], column(4)[mid]);
    if (bytes_at)
      std::printf("; dtmpi structures max %lld B, at 3072 ranks %lld B", column(5).back(), column(6).back());
    std::printf("; wrong regions %d\n", wrong_total);
    if (text && args.has("--detail")) std::printf("rank 0 %s\n", text());
  }
  for (auto& t : h.send_types) MPI_Type_free(&t);
  for (auto& t : h.recv_types) MPI_Type_free(&t);
  MPI_Comm_free(&h.graph);
  MPI_Comm_free(&h.cart);
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
