// Added latency of the interposer on contiguous host traffic: 8-byte
// MPI_Send/MPI_Recv ping-pong through dtmpi (MPI_*) and straight to the system
// MPI (PMPI_*), interleaved in rounds so both see the same machine state; on
// a machine with a usable GPU, for each place a host buffer can live (stack,
// brk heap, an mmap'd page that only the driver can classify, MPI_Alloc_mem's
// memory (dtmpi's host ranges), a type with
// the buffer-location attribute) and, as the classification before issue 29,
// with the driver's pointer query made on every call. Then the system MPI's
// own cost per call of what dtmpi's transfers use (a 232-byte control message,
// a test of a request that is not complete, one test of many): on some
// machines a call that runs the system MPI's progress engine costs
// microseconds, which decides how dtmpi's progress must poll.
#include <mpi.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dtmpi/dtmpi.h"
#include "interpose/p2p_route.hpp"
#include "runtime/buffer_hint.hpp"
#include "transport/engine.hpp"
#include "transport/stash.hpp"
#include "runtime/device.hpp"
#include "runtime/host_ranges.hpp"
#include "runtime/mapped_host.hpp"
#include "runtime/pointer_kind.hpp"
#include "timing.hpp"

namespace dtmpi::bench {

#ifdef DTMPI_BENCH_FORTRAN
void fortran_latency(int me);  // bench_latency_fortran.cpp
#endif

namespace {
template <class Send, class Recv>
double pingpong(int me, int iters, char* buf, MPI_Datatype type, Send send, Recv recv) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (me == 0) {
      send(buf, 8, type, 1, 0, MPI_COMM_WORLD);
      recv(buf, 8, type, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      recv(buf, 8, type, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      send(buf, 8, type, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) / iters / 2;  // one-way
}

// dtmpi with the classification it had before issue 29: the driver's pointer
// query on every call, on top of today's path.
int send_driver_query(const void* buf, int n, MPI_Datatype t, int peer, int tag, MPI_Comm c) {
  (void)runtime::pointer_info_exact(buf);
  return MPI_Send(buf, n, t, peer, tag, c);
}
int recv_driver_query(void* buf, int n, MPI_Datatype t, int peer, int tag, MPI_Comm c, MPI_Status* st) {
  (void)runtime::pointer_info_exact(buf);
  return MPI_Recv(buf, n, t, peer, tag, c, st);
}

struct Row {
  const char* name;
  char* buf;
  MPI_Datatype type;
  bool old_classification;
  std::vector<double> direct, via;
};

constexpr int kCostRounds = 9;

struct CallCosts {
  double isend = 0, test = 0, testsome = 0, tests = 0;  // seconds per call
};

// Rank 0 times the calls; rank 1 receives the control messages afterwards.
// The receives tested are posted on a tag nobody sends to, then cancelled.
CallCosts call_costs(int me) {
  constexpr int kSends = 200, kTests = 2000, kOpen = 32;
  CallCosts c;
  std::vector<double> isend, test, testsome, tests;
  char msg[232] = {};
  std::vector<char> sink(232 * kSends);
  for (int r = 0; r < kCostRounds; ++r) {
    PMPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
      std::vector<MPI_Request> s(kSends);
      double t0 = MPI_Wtime();
      for (int i = 0; i < kSends; ++i) PMPI_Isend(msg, 232, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &s[static_cast<size_t>(i)]);
      isend.push_back((MPI_Wtime() - t0) / kSends);
      PMPI_Waitall(kSends, s.data(), MPI_STATUSES_IGNORE);
      std::vector<MPI_Request> open(kOpen);
      char dummy[kOpen] = {};
      for (int i = 0; i < kOpen; ++i) PMPI_Irecv(&dummy[i], 1, MPI_BYTE, 1, 99, MPI_COMM_WORLD, &open[static_cast<size_t>(i)]);
      int flag = 0, outcount = 0;
      std::vector<int> idx(kOpen);
      t0 = MPI_Wtime();
      for (int i = 0; i < kTests; ++i) PMPI_Test(&open[0], &flag, MPI_STATUS_IGNORE);
      test.push_back((MPI_Wtime() - t0) / kTests);
      t0 = MPI_Wtime();
      for (int i = 0; i < kTests / 10; ++i) PMPI_Testsome(kOpen, open.data(), &outcount, idx.data(), MPI_STATUSES_IGNORE);
      testsome.push_back((MPI_Wtime() - t0) / (kTests / 10));
      t0 = MPI_Wtime();
      for (int i = 0; i < kTests / 10; ++i)
        for (auto& q : open) PMPI_Test(&q, &flag, MPI_STATUS_IGNORE);
      tests.push_back((MPI_Wtime() - t0) / (kTests / 10));
      for (auto& q : open) {
        PMPI_Cancel(&q);
        PMPI_Wait(&q, MPI_STATUS_IGNORE);
      }
    } else if (me == 1) {
      for (int i = 0; i < kSends; ++i)
        PMPI_Recv(&sink[static_cast<size_t>(i) * 232], 232, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  if (me == 0) {
    c.isend = median(isend);
    c.test = median(test);
    c.testsome = median(testsome);
    c.tests = median(tests);
  }
  return c;
}

// What dtmpi does in front of the system MPI for an 8-byte host MPI_Send and
// MPI_Recv, piece by piece, without the MPI call (ns per call, rank 0): where
// the added latency goes.
struct Piece {
  const char* name;
  double ns;
};

template <class F>
double ns_per_call(F f) {
  constexpr int kCalls = 1000000;
  std::vector<double> r;
  for (int round = 0; round < 5; ++round) {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < kCalls; ++i) f();
    r.push_back((MPI_Wtime() - t0) / kCalls * 1e9);
  }
  std::sort(r.begin(), r.end());
  return r[2];
}

std::vector<Piece> decision_pieces(char* buf, char* page) {
  volatile int sink = 0;
  std::vector<Piece> p;
  p.push_back({"empty loop", ns_per_call([&] { sink = sink + 1; })});
  p.push_back({"transport::poll", ns_per_call([&] { transport::poll(); sink = sink + 1; })});
  p.push_back({"transport::stash_any", ns_per_call([&] { sink = sink + transport::stash_any(); })});
  p.push_back({"type::find_plan", ns_per_call([&] { sink = sink + (type::find_plan(MPI_BYTE) != nullptr); })});
  p.push_back({"type::size_fast", ns_per_call([&] { sink = sink + static_cast<int>(type::size_fast(MPI_BYTE).value()); })});
  p.push_back({"runtime::provably_host", ns_per_call([&] { sink = sink + runtime::provably_host(buf); })});
  if (runtime::mapping_watch().on) {
    p.push_back({"mapped_host generation (sum of the rings' heads)", ns_per_call([&] {
                   sink = sink + static_cast<int>(runtime::mapped_host_detail::generation_now());
                 })});
    p.push_back({"runtime::provably_host, the mmap'd page", ns_per_call([&] { sink = sink + runtime::provably_host(page); })});
  }
  p.push_back({"runtime::pointer_info", ns_per_call([&] { sink = sink + static_cast<int>(runtime::pointer_info(buf).kind); })});
  p.push_back({"runtime::buffer_info", ns_per_call([&] {
                 sink = sink + static_cast<int>(runtime::buffer_info(buf, MPI_BYTE).kind);
               })});
  p.push_back({"plain_host_no_call (the exported fast path)", ns_per_call([&] {
                 sink = sink + interpose::plain_host_no_call(buf, 8, MPI_BYTE, transport::kMultiMin);
               })});
  p.push_back({"must_stage (MPI_Send's decision past it)", ns_per_call([&] {
                 transport::UserBuffer b;
                 sink = sink + interpose::must_stage(buf, 8, MPI_BYTE, b);
               })});
  p.push_back({"route_receive (MPI_Recv's decision past it)", ns_per_call([&] {
                 interpose::RecvRoute r;
                 sink = sink + interpose::route_receive(buf, 8, MPI_BYTE, r);
               })});
  return p;
}

}  // namespace

int bench_latency(int argc, char** argv) {
  const bool fortran = argc > 1 && std::string(argv[1]) == "--fortran";
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n < 2) {
    if (me == 0) std::fprintf(stderr, "latency needs 2 ranks\n");
    return 2;
  }
  const int iters = 20000, rounds = 15;
  char stack_buf[8] = {};
  char* heap_buf = static_cast<char*>(std::malloc(8));
  auto* page = static_cast<char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (page == MAP_FAILED) return 1;
  // MPI_Alloc_mem's memory: proven host by dtmpi's host ranges while it lives
  char* alloc_mem = nullptr;
  if (MPI_Alloc_mem(4096, MPI_INFO_NULL, &alloc_mem) != MPI_SUCCESS) return 1;
  const bool gpu = runtime::gpu_enabled();
  MPI_Datatype host_bytes = MPI_DATATYPE_NULL;
  std::vector<Row> rows;
  rows.push_back({"stack buffer", stack_buf, MPI_BYTE, false, {}, {}});
  if (gpu) {
    rows.push_back({"heap buffer (malloc 8 B)", heap_buf, MPI_BYTE, false, {}, {}});
    rows.push_back({"mmap'd page (learned mapping)", page, MPI_BYTE, false, {}, {}});
    rows.push_back({"MPI_Alloc_mem (host ranges)", alloc_mem, MPI_BYTE, false, {}, {}});
    if (dtmpi_buffer_keyval() != MPI_KEYVAL_INVALID) {
      MPI_Type_dup(MPI_BYTE, &host_bytes);
      MPI_Type_commit(&host_bytes);
      // the attribute is set only around this row's runs: while any type has
      // it, every call looks its type up (the other rows are without it)
      rows.push_back({"mmap'd page, DTMPI_BUFFER_HOST", page, host_bytes, false, {}, {}});
    }
    rows.push_back({"stack, driver query per call", stack_buf, MPI_BYTE, true, {}, {}});
  }
  pingpong(me, 2000, stack_buf, MPI_BYTE, PMPI_Send, PMPI_Recv);  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (Row& row : rows) {
      const bool hinted = row.type != MPI_BYTE;
      if (hinted) MPI_Type_set_attr(row.type, dtmpi_buffer_keyval(), DTMPI_BUFFER_HOST);
      row.direct.push_back(pingpong(me, iters, row.buf, row.type, PMPI_Send, PMPI_Recv));
      row.via.push_back(row.old_classification ? pingpong(me, iters, row.buf, row.type, send_driver_query, recv_driver_query)
                                               : pingpong(me, iters, row.buf, row.type, MPI_Send, MPI_Recv));
      if (hinted) MPI_Type_delete_attr(row.type, dtmpi_buffer_keyval());
    }
  // driver queries made by the stack rows' dtmpi ping-pongs (one timed run)
  const uint64_t q0 = runtime::driver_pointer_queries();
  pingpong(me, iters, stack_buf, MPI_BYTE, MPI_Send, MPI_Recv);
  const uint64_t stack_queries = runtime::driver_pointer_queries() - q0;
  // and by the mmap'd page's (learned from /proc/self/maps where the mapping
  // watch runs: runtime/mapped_host.hpp)
  const uint64_t q1 = runtime::driver_pointer_queries();
  if (gpu) pingpong(me, iters, page, MPI_BYTE, MPI_Send, MPI_Recv);
  const uint64_t page_queries = runtime::driver_pointer_queries() - q1;
  const runtime::MappingWatch watch = runtime::mapping_watch();
  const CallCosts costs = call_costs(me);
  const std::vector<Piece> pieces = decision_pieces(stack_buf, page);
  if (me == 0) {
    std::printf("8-byte MPI_Send/MPI_Recv ping-pong, one-way latency (median of %d rounds x %d)\n", rounds, iters);
    std::printf("GPU classification: %s; host buffers proven by address ranges: %s\n",
                gpu ? "on (CUDA driver and device present)" : "off (no GPU, or DTMPI_CUDA=off)",
                runtime::provably_host(stack_buf) ? "yes" : "no");
    for (Row& row : rows) {
      std::sort(row.direct.begin(), row.direct.end());
      std::sort(row.via.begin(), row.via.end());
      const double d = row.direct[rounds / 2] * 1e9, v = row.via[rounds / 2] * 1e9;
      std::printf("%-32s system MPI %7.1f ns  through dtmpi %7.1f ns  added %6.1f ns (%5.2f%%)\n", row.name, d, v,
                  v - d, (v - d) / d * 100);
    }
    std::printf("driver pointer queries: %llu in %d dtmpi ping-pong iterations on the stack buffer\n",
                static_cast<unsigned long long>(stack_queries), iters);
    if (gpu) {
      std::printf("mapping watch: %s", watch.on ? "on" : ("off: " + watch.why_off).c_str());
      if (watch.on)
        std::printf(" (%d rings, %d events, %d mappings trusted, %llu reads of /proc/self/maps, %llu mremap calls)",
                    watch.rings, watch.events, watch.learned, static_cast<unsigned long long>(watch.learns),
                    static_cast<unsigned long long>(watch.unrecorded));
      std::printf("\ndriver pointer queries: %llu in %d dtmpi ping-pong iterations on the mmap'd page\n",
                  static_cast<unsigned long long>(page_queries), iters);
    }
    std::printf("\ndtmpi's decision in front of the system MPI, stack buffer, no MPI call (rank 0, ns per call)\n");
    for (const Piece& piece : pieces) std::printf("%-44s %10.1f ns\n", piece.name, piece.ns);
    std::printf("\nsystem MPI cost per call (rank 0, medians of %d rounds)\n", kCostRounds);
    std::printf("%-44s %10.1f ns\n", "PMPI_Isend of 232 B to rank 1", costs.isend * 1e9);
    std::printf("%-44s %10.1f ns\n", "PMPI_Test of a receive not yet matched", costs.test * 1e9);
    std::printf("%-44s %10.1f ns\n", "PMPI_Testsome over 32 such receives", costs.testsome * 1e9);
    std::printf("%-44s %10.1f ns\n", "32 x PMPI_Test, one per receive", costs.tests * 1e9);
  }
  if (fortran) {
#ifdef DTMPI_BENCH_FORTRAN
    fortran_latency(me);
#else
    if (me == 0) std::printf("\n--fortran: this build found no Fortran library of its MPI\n");
#endif
  }
  if (host_bytes != MPI_DATATYPE_NULL) MPI_Type_free(&host_bytes);
  munmap(page, 4096);
  MPI_Free_mem(alloc_mem);
  std::free(heap_buf);
  return 0;
}

}  // namespace dtmpi::bench
