// dtmpi-bench protocols: claims C3 and C4 of the Nishtala digest
// (../shared/research/seed-001-nishtala.md, section 6) on the node segment of
// dtmpi's collectives (transport/onesided.hpp), a broadcast from rank 0 to
// every other rank of the node, barrier-separated latency (the slowest rank's
// time per call, median of samples), 8 B to 4 MiB:
//   push   signaling put: the root writes into each reader's destination (a
//          known address in the segment) and raises the reader's flag
//   eager  the root writes into each reader's bounce slot and raises its
//          flag; the reader copies out into its destination
//   rdv    rendez-vous: the root announces its source (a flag), each reader
//          gets from it into its destination and acknowledges (a counter the
//          root waits for before its buffer is free again)
//   single dtmpi's flat Bcast: the root copies into its own slot once, readers
//          get from the address they cached at creation (the thesis's Single)
//   local  the same, with the address discovered per call: the root sends
//          the slot's offset in an 8-byte message first (the thesis's Local)
// C4 holds where rdv is the slowest and push ~ eager; C3 where single <= local
// at every size. Every reader's destination is checked after each protocol.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "timing.hpp"
#include "transport/onesided.hpp"

namespace dtmpi::bench {

namespace {

using Seg = transport::NodeSegment;

constexpr int kProtocols = 5;
const char* const kNames[kProtocols] = {"push", "eager", "rdv", "single", "local"};

// Flags only grow: every call of every protocol gets the next value. The
// rendez-vous acknowledgements count up by n-1 per rendez-vous call.
uint64_t g_value = 0, g_rdv_calls = 0;

// Slot 0 of a rank's area: its bounce / source buffer; slot 1: its destination.
struct Bufs {
  Seg& seg;
  int me, n;
  char* dst(int r) const { return seg.scratch(r, 1); }
  char* bounce(int r) const { return seg.scratch(r, 0); }
};

void call(int protocol, const Bufs& b, const char* src, size_t bytes) {
  const uint64_t v = ++g_value;
  Seg& s = b.seg;
  const bool root = b.me == 0;
  switch (protocol) {
    case 0:  // push
      if (root) {
        for (int r = 1; r < b.n; ++r) {
          Seg::put(b.dst(r), src, bytes);
          Seg::signal(s.flags(r).in[0], v);
        }
      } else {
        Seg::wait(s.flags(b.me).in[0], v);
      }
      return;
    case 1:  // eager
      if (root) {
        for (int r = 1; r < b.n; ++r) {
          Seg::put(b.bounce(r), src, bytes);
          Seg::signal(s.flags(r).in[0], v);
        }
      } else {
        Seg::wait(s.flags(b.me).in[0], v);
        Seg::get(b.dst(b.me), b.bounce(b.me), bytes);
      }
      return;
    case 2:  // rendez-vous: the source is the root's own buffer, in shared memory
      ++g_rdv_calls;
      if (root) {
        Seg::signal(s.flags(0).ready, v);
        // every reader's acknowledgement: the counter grows by n-1 per call
        Seg::wait(s.flags(0).counter, static_cast<uint64_t>(b.n - 1) * g_rdv_calls);
      } else {
        Seg::wait(s.flags(0).ready, v);
        Seg::get(b.dst(b.me), b.bounce(0), bytes);
        Seg::add(s.flags(0).counter, 1);
      }
      return;
    case 3:  // single: copy once into the own slot, readers pull
    case 4: {  // local: the slot's offset travels in a message first
      if (root) Seg::put(b.bounce(0), src, bytes);
      // where the root's bytes lie: cached (single), or its offset in the
      // root's area received now and resolved in this rank's mapping (local)
      char* const area = reinterpret_cast<char*>(&s.flags(0));
      long long offset = root ? static_cast<long long>(b.bounce(0) - area) : -1;
      if (protocol == 4) PMPI_Bcast(&offset, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
      const char* from = protocol == 4 ? area + offset : b.bounce(0);
      if (root) {
        Seg::signal(s.flags(0).in[1], v);
      } else {
        Seg::wait(s.flags(0).in[1], v);
        Seg::get(b.dst(b.me), from, bytes);
      }
      return;
    }
  }
}

}  // namespace

int bench_protocols(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const size_t max_bytes = size_t{4} << 20;
  auto made = Seg::create(MPI_COMM_WORLD, max_bytes);
  if (!made || !made.value()) {
    if (me == 0) std::fprintf(stderr, "dtmpi-bench protocols: no node segment (ranks on several nodes?)\n");
    return 1;
  }
  if (n < 2) {
    if (me == 0) std::fprintf(stderr, "dtmpi-bench protocols: needs at least 2 ranks\n");
    return 1;
  }
  Seg& seg = *made.value();
  const Bufs bufs{seg, me, n};
  std::vector<char> src(max_bytes);
  const int samples = quick ? 5 : 11;
  if (me == 0)
    std::printf("broadcast from rank 0 to %d ranks of one node over dtmpi's node segment: us per call, barrier-"
                "separated (the slowest rank, median of %d samples)\n%10s %9s %9s %9s %9s %9s  C4  C3\n",
                n - 1, samples, "bytes", kNames[0], kNames[1], kNames[2], kNames[3], kNames[4]);
  int c3 = 0, c4 = 0, rows = 0, bad = 0;
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= quick ? 16 : 4) {
    const int iters = bytes <= 4096 ? 200 : bytes <= (256 << 10) ? 40 : 10;
    double us[kProtocols];
    for (int p = 0; p < kProtocols; ++p) {
      std::vector<double> t;
      for (int s = 0; s < samples; ++s) {
        for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<char>(i * 7 + s + p);
        if (me != 0) std::memset(bufs.dst(me), 0, bytes);
        // the rendez-vous root's buffer is its shared slot (zero copy there)
        if (me == 0) std::memcpy(bufs.bounce(0), src.data(), bytes);
        double total = 0;
        for (int i = 0; i < iters; ++i) {
          PMPI_Barrier(MPI_COMM_WORLD);
          const double t0 = PMPI_Wtime();
          call(p, bufs, src.data(), bytes);
          total += PMPI_Wtime() - t0;
        }
        double mine = total / iters, slowest = 0;
        PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t.push_back(slowest);
        // every reader's destination holds the root's bytes of this sample
        PMPI_Bcast(src.data(), static_cast<int>(bytes), MPI_CHAR, 0, MPI_COMM_WORLD);
        if (me != 0 && std::memcmp(bufs.dst(me), src.data(), bytes) != 0) ++bad;
        PMPI_Barrier(MPI_COMM_WORLD);
      }
      us[p] = median(t) * 1e6;
    }
    int wrong = 0;
    PMPI_Allreduce(&bad, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const bool holds4 = us[2] >= std::max(us[0], us[1]) && std::max(us[0], us[1]) <= 1.25 * std::min(us[0], us[1]);
    const bool holds3 = us[3] <= us[4];
    ++rows;
    c4 += holds4;
    c3 += holds3;
    if (me == 0)
      std::printf("%10zu %9.2f %9.2f %9.2f %9.2f %9.2f  %-3s %-3s%s\n", bytes, us[0], us[1], us[2], us[3], us[4],
                  holds4 ? "yes" : "no", holds3 ? "yes" : "no", wrong ? "  WRONG BYTES" : "");
    if (wrong) return 1;
  }
  if (me == 0)
    std::printf("C4 (rendez-vous slowest, push within 25%% of eager) holds in %d of %d sizes; C3 (Single <= Local) "
                "in %d of %d\n",
                c4, rows, c3, rows);
  return 0;
}

}  // namespace dtmpi::bench
