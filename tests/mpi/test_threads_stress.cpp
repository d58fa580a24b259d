// Many threads per rank under MPI_THREAD_MULTIPLE, each doing its own
// point-to-point traffic at the same time as the others: random derived types
// (the same on both sides, from a seed both derive), blocking and non-blocking
// sends and receives, wildcards (ANY_SOURCE on a tag only this thread uses,
// ANY_TAG on a communicator only this thread uses), probes then receives,
// matched probes, every Wait/Test form, all-to-all and allgather on the
// private communicators. Half the threads share
// MPI_COMM_WORLD (one tag each), half have a communicator of their own.
// Every received element is compared with what the sender packed (the system
// MPI's MPI_Pack is the oracle) and every byte outside the typemap must keep
// its poison. The staged host paths keep dtmpi's own request tables, probe
// stash and staging pools busy from all threads at once: issue 20 found a
// receive finishing another thread's message when the system MPI reused a
// request handle. CTest runs it under every host staging setting, both MPIs,
// the sanitizer build, and (built with DTMPI_STRESS_GPU) on device buffers.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/mpi_world.hpp"
#include "common/random_types.hpp"

#ifdef DTMPI_STRESS_GPU
#include <cuda_runtime.h>
#endif

namespace {

using dtmpi::testing::world_rank;
using dtmpi::testing::world_size;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

constexpr unsigned char kPoison = 0xA5;
constexpr int64_t kMaxBytes = 96 * 1024;  // a few cross transport::kMultiMin (64 KiB)

// A committed random type of one thread's iteration: the sender and the
// receiver build the same one from the seed. Skips typemaps that touch a byte
// twice (erroneous receive buffers) and oversized ones.
struct Layout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 1;  // elements per message (per block of a collective)
  int total = 1;  // elements the buffer holds (count x blocks)
  int64_t size = 0;
  dtmpi::testing::Span span{};
  std::string recipe;

  // `blocks` consecutive groups of `count` elements must not overlap either
  // (the whole buffer of an all-to-all / allgather)
  explicit Layout(uint64_t seed, int blocks = 1) {
    for (uint64_t s = seed;; s += 0x9E3779B97F4A7C15ull) {
      dtmpi::testing::RandomTypes gen(s);
      MPI_Datatype t = gen.make(gen.uniform(0, 2));
      if (t == MPI_DATATYPE_NULL) continue;
      int named = 0, ni, na, nd;
      MPI_Type_get_envelope(t, &ni, &na, &nd, &named);
      if (named != MPI_COMBINER_NAMED) MPI_Type_commit(&t);
      const int c = gen.uniform(1, 3);
      int sz = 0;
      MPI_Type_size(t, &sz);
      const auto sp = dtmpi::testing::span_of(t, c * blocks);
      bool ok = sz > 0 && int64_t{sz} * c * blocks <= kMaxBytes && sp.hi - sp.lo <= 4 * kMaxBytes;
      if (ok) {
        auto offs = dtmpi::testing::typemap_offsets(t, c * blocks);
        std::sort(offs.begin(), offs.end());
        ok = std::adjacent_find(offs.begin(), offs.end()) == offs.end();
      }
      if (!ok) {
        dtmpi::testing::free_type(t);
        continue;
      }
      type = t;
      count = c;
      total = c * blocks;
      size = sz;
      span = sp;
      recipe = gen.recipe();
      return;
    }
  }
  ~Layout() { dtmpi::testing::free_type(type); }
  size_t extent_bytes() const { return static_cast<size_t>(span.hi - span.lo); }
};

// The bytes a sender with (rank, thread, iteration) puts in its buffer.
void fill(std::vector<unsigned char>& b, int rank, int thread, int iter) {
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<unsigned char>((rank * 131 + thread * 31 + iter * 7 + i * 13 + (i >> 7)) & 0xFF);
}

// Where the test's buffers live: host vectors, mirrored on the device in the
// GPU build (the MPI calls get the device copy).
class Buffer {
 public:
  explicit Buffer(size_t n) : host_(n) {
#ifdef DTMPI_STRESS_GPU
    if (cudaMalloc(&dev_, n ? n : 1) != cudaSuccess) dev_ = nullptr;
#endif
  }
  ~Buffer() {
#ifdef DTMPI_STRESS_GPU
    cudaFree(dev_);
#endif
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::vector<unsigned char>& host() { return host_; }
  // the address MPI gets, after the host bytes were copied there
  unsigned char* to_mpi() {
#ifdef DTMPI_STRESS_GPU
    cudaMemcpy(dev_, host_.data(), host_.size(), cudaMemcpyHostToDevice);
    return static_cast<unsigned char*>(dev_);
#else
    return host_.data();
#endif
  }
  // after MPI wrote to_mpi()'s bytes
  void from_mpi() {
#ifdef DTMPI_STRESS_GPU
    cudaMemcpy(host_.data(), dev_, host_.size(), cudaMemcpyDeviceToHost);
#endif
  }

 private:
  std::vector<unsigned char> host_;
  void* dev_ = nullptr;
};

enum class Shape {
  kIsendIrecvWaitall,
  kSendrecv,
  kAnySourceIrecvWait,
  kProbeRecv,
  kIprobeRecv,
  kMprobeMrecv,
  kImprobeImrecv,
  kTestsomeLoop,
  kWaitanyLoop,
  kIssendTestall,
  kCount
};
const char* name(Shape s) {
  static const char* names[] = {"Isend+Irecv+Waitall", "Sendrecv",  "Irecv(ANY_SOURCE)+Send+Wait",
                                "Probe+Recv",          "Iprobe+Recv", "Mprobe+Mrecv",
                                "Improbe+Imrecv+Wait", "Testsome loop", "Waitany loop", "Issend+Testall loop"};
  return names[static_cast<int>(s)];
}

struct ThreadResult {
  int wrong_bytes = 0, wrong_status = 0, errors = 0;
  std::string first;
};

// An all-to-all or allgather of random types on a communicator only this
// thread uses (collectives of different threads on different communicators
// run at once, as MPI allows): block r of the result must be what rank r
// packed for this rank.
void collective(int t, int it, MPI_Comm comm, bool alltoall, uint64_t seed, ThreadResult& res) {
  const int me = world_rank(), n = world_size();
  Layout L(seed + static_cast<uint64_t>(t) * 100003u + static_cast<uint64_t>(it), n);
  Buffer sbuf(L.extent_bytes()), rbuf(L.extent_bytes());
  fill(sbuf.host(), me, t, it);
  std::fill(rbuf.host().begin(), rbuf.host().end(), kPoison);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(L.type, &lb, &extent);
  unsigned char* s = sbuf.to_mpi() - L.span.lo;
  unsigned char* r = rbuf.to_mpi() - L.span.lo;
  // allgather: this rank's block is the first `count` elements of its buffer
  const int rc = alltoall ? MPI_Alltoall(s, L.count, L.type, r, L.count, L.type, comm)
                          : MPI_Allgather(s, L.count, L.type, r, L.count, L.type, comm);
  if (rc != MPI_SUCCESS) ++res.errors;
  rbuf.from_mpi();
  const size_t block = static_cast<size_t>(L.size * L.count);
  std::vector<unsigned char> got(block * n);
  int pos = 0;
  PMPI_Pack(rbuf.host().data() - L.span.lo, L.total, L.type, got.data(), static_cast<int>(got.size()), &pos,
            MPI_COMM_SELF);
  int bad = 0;
  for (int from = 0; from < n; ++from) {
    std::vector<unsigned char> theirs(L.extent_bytes()), packed(block * n);
    fill(theirs, from, t, it);
    int p = 0;
    PMPI_Pack(theirs.data() - L.span.lo, L.total, L.type, packed.data(), static_cast<int>(packed.size()), &p,
              MPI_COMM_SELF);
    const size_t src = alltoall ? block * me : 0;
    for (size_t i = 0; i < block; ++i) bad += packed[src + i] != got[block * from + i];
  }
  std::vector<unsigned char> mask(L.extent_bytes(), 0);
  for (int64_t off : dtmpi::testing::typemap_offsets(L.type, L.total)) mask[static_cast<size_t>(off - L.span.lo)] = 1;
  for (size_t i = 0; i < mask.size(); ++i) bad += !mask[i] && rbuf.host()[i] != kPoison;
  res.wrong_bytes += bad;
  if ((bad || rc != MPI_SUCCESS) && res.first.empty())
    res.first = "thread " + std::to_string(t) + " iteration " + std::to_string(it) +
                (alltoall ? " (Alltoall)" : " (Allgather)") + ": " + std::to_string(bad) + " wrong bytes; type " +
                L.recipe + " x" + std::to_string(L.count);
}

// One thread's run: `iters` exchanges with its ring neighbours on `comm`.
void run_thread(int t, MPI_Comm comm, bool own_comm, int iters, uint64_t seed, ThreadResult& res) {
  const int me = world_rank(), n = world_size(), right = (me + 1) % n, left = (me + n - 1) % n;
  const int my_tag = own_comm ? 7 : 100 + t;  // the tag this thread uses on a shared communicator
  for (int it = 0; it < iters; ++it) {
    if (own_comm && it % 4 == 3) {  // every fourth round on a private communicator: a collective
      collective(t, it, comm, it % 8 == 3, seed, res);
      continue;
    }
    Layout L(seed + static_cast<uint64_t>(t) * 100003u + static_cast<uint64_t>(it));
    const Shape shape = static_cast<Shape>((it + t) % static_cast<int>(Shape::kCount));
    // on its own communicator the tag varies and receives may use ANY_TAG
    const int tag = own_comm ? 7 + it % 5 : my_tag;
    const int rtag = own_comm && it % 2 ? MPI_ANY_TAG : tag;
    Buffer sbuf(L.extent_bytes()), rbuf(L.extent_bytes());
    fill(sbuf.host(), me, t, it);
    std::fill(rbuf.host().begin(), rbuf.host().end(), kPoison);
    unsigned char* s = sbuf.to_mpi() - L.span.lo;
    unsigned char* r = rbuf.to_mpi() - L.span.lo;
    MPI_Status st;
    st.MPI_SOURCE = -99;
    st.MPI_TAG = -99;
    int rc = MPI_SUCCESS;
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[2];
    switch (shape) {
      case Shape::kIsendIrecvWaitall:
        rc |= MPI_Irecv(r, L.count, L.type, left, rtag, comm, &q[0]);
        rc |= MPI_Isend(s, L.count, L.type, right, tag, comm, &q[1]);
        rc |= MPI_Waitall(2, q, sts);
        st = sts[0];
        break;
      case Shape::kSendrecv:
        rc |= MPI_Sendrecv(s, L.count, L.type, right, tag, r, L.count, L.type, left, rtag, comm, &st);
        break;
      case Shape::kAnySourceIrecvWait:
        rc |= MPI_Irecv(r, L.count, L.type, MPI_ANY_SOURCE, rtag, comm, &q[0]);
        rc |= MPI_Isend(s, L.count, L.type, right, tag, comm, &q[1]);
        rc |= MPI_Wait(&q[0], &st);
        rc |= MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        break;
      case Shape::kProbeRecv:
      case Shape::kIprobeRecv: {
        rc |= MPI_Isend(s, L.count, L.type, right, tag, comm, &q[1]);
        MPI_Status pst;
        if (shape == Shape::kProbeRecv) {
          rc |= MPI_Probe(MPI_ANY_SOURCE, rtag, comm, &pst);
        } else {
          for (int flag = 0; !flag;) rc |= MPI_Iprobe(MPI_ANY_SOURCE, rtag, comm, &flag, &pst);
        }
        int pbytes = -1;
        MPI_Get_count(&pst, MPI_BYTE, &pbytes);
        if (pst.MPI_SOURCE != left || pbytes != L.size * L.count) ++res.wrong_status;
        rc |= MPI_Recv(r, L.count, L.type, pst.MPI_SOURCE, pst.MPI_TAG, comm, &st);
        rc |= MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        break;
      }
      case Shape::kMprobeMrecv:
      case Shape::kImprobeImrecv: {
        rc |= MPI_Isend(s, L.count, L.type, right, tag, comm, &q[1]);
        MPI_Message msg = MPI_MESSAGE_NULL;
        MPI_Status pst;
        if (shape == Shape::kMprobeMrecv) {
          rc |= MPI_Mprobe(MPI_ANY_SOURCE, rtag, comm, &msg, &pst);
          rc |= MPI_Mrecv(r, L.count, L.type, &msg, &st);
        } else {
          for (int flag = 0; !flag;) rc |= MPI_Improbe(MPI_ANY_SOURCE, rtag, comm, &flag, &msg, &pst);
          rc |= MPI_Imrecv(r, L.count, L.type, &msg, &q[0]);
          rc |= MPI_Wait(&q[0], &st);
        }
        int pbytes = -1;
        MPI_Get_count(&pst, MPI_BYTE, &pbytes);
        if (pst.MPI_SOURCE != left || pbytes != L.size * L.count) ++res.wrong_status;
        rc |= MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        break;
      }
      case Shape::kTestsomeLoop: {
        rc |= MPI_Isend(s, L.count, L.type, right, tag, comm, &q[0]);
        rc |= MPI_Irecv(r, L.count, L.type, left, rtag, comm, &q[1]);
        for (int left_to_do = 2; left_to_do > 0;) {
          int out = 0, idx[2];
          rc |= MPI_Testsome(2, q, &out, idx, sts);
          if (out == MPI_UNDEFINED) break;
          for (int k = 0; k < out; ++k)
            if (idx[k] == 1) st = sts[k];
          left_to_do -= out;
        }
        break;
      }
      case Shape::kWaitanyLoop:
        rc |= MPI_Irecv(r, L.count, L.type, left, rtag, comm, &q[0]);
        rc |= MPI_Isend(s, L.count, L.type, right, tag, comm, &q[1]);
        for (int k = 0; k < 2; ++k) {
          int idx = -1;
          MPI_Status one;
          rc |= MPI_Waitany(2, q, &idx, &one);
          if (idx == 0) st = one;
        }
        break;
      case Shape::kIssendTestall:
        rc |= MPI_Irecv(r, L.count, L.type, left, rtag, comm, &q[0]);
        rc |= MPI_Issend(s, L.count, L.type, right, tag, comm, &q[1]);
        for (int flag = 0; !flag;) rc |= MPI_Testall(2, q, &flag, sts);
        st = sts[0];
        break;
      case Shape::kCount:
        break;
    }
    if (rc != MPI_SUCCESS) ++res.errors;
    rbuf.from_mpi();
    // the oracle: what the left neighbour's thread t packed in this iteration
    std::vector<unsigned char> expect(L.extent_bytes());
    fill(expect, left, t, it);
    std::vector<unsigned char> want(static_cast<size_t>(L.size * L.count)), got(want.size());
    int p1 = 0, p2 = 0;
    PMPI_Pack(expect.data() - L.span.lo, L.count, L.type, want.data(), static_cast<int>(want.size()), &p1,
              MPI_COMM_SELF);
    PMPI_Pack(rbuf.host().data() - L.span.lo, L.count, L.type, got.data(), static_cast<int>(got.size()), &p2,
              MPI_COMM_SELF);
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i) bad += want[i] != got[i];
    // bytes outside the typemap keep their poison
    std::vector<unsigned char> mask(L.extent_bytes(), 0);
    for (int64_t off : dtmpi::testing::typemap_offsets(L.type, L.count)) mask[static_cast<size_t>(off - L.span.lo)] = 1;
    for (size_t i = 0; i < mask.size(); ++i) bad += !mask[i] && rbuf.host()[i] != kPoison;
    int cnt = -1;
    MPI_Get_count(&st, L.type, &cnt);
    const bool status_ok = st.MPI_SOURCE == left && (own_comm || st.MPI_TAG == tag) && cnt == L.count;
    if (!status_ok) ++res.wrong_status;
    if (bad) res.wrong_bytes += bad;
    if ((bad || !status_ok || rc != MPI_SUCCESS) && res.first.empty())
      res.first = "thread " + std::to_string(t) + " iteration " + std::to_string(it) + " (" + name(shape) +
                  "): " + std::to_string(bad) + " wrong bytes, status source " + std::to_string(st.MPI_SOURCE) +
                  " tag " + std::to_string(st.MPI_TAG) + " count " + std::to_string(cnt) + ", rc " +
                  std::to_string(rc) + "; type " + L.recipe + " x" + std::to_string(L.count);
  }
}

TEST(ThreadsStress, ConcurrentPointToPointOfRandomTypes) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "the system MPI does not provide MPI_THREAD_MULTIPLE";
  const int threads = env_int("DTMPI_TEST_THREAD_COUNT", 4);
  const int iters = env_int("DTMPI_TEST_ITERATIONS", 60);
  const uint64_t seed = static_cast<uint64_t>(env_int("DTMPI_TEST_SEED", 20261125));
  // odd threads: a communicator of their own (created here: MPI_Comm_dup is collective)
  std::vector<MPI_Comm> comms(static_cast<size_t>(threads), MPI_COMM_WORLD);
  for (int t = 1; t < threads; t += 2) MPI_Comm_dup(MPI_COMM_WORLD, &comms[static_cast<size_t>(t)]);
  std::vector<ThreadResult> res(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      run_thread(t, comms[static_cast<size_t>(t)], t % 2 == 1, iters, seed, res[static_cast<size_t>(t)]);
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    const auto& r = res[static_cast<size_t>(t)];
    EXPECT_EQ(r.wrong_bytes + r.wrong_status + r.errors, 0)
        << "thread " << t << ": " << r.wrong_bytes << " wrong bytes, " << r.wrong_status << " wrong statuses, "
        << r.errors << " errors; first: " << r.first << " (seed " << seed << ")";
  }
  for (int t = 1; t < threads; t += 2) MPI_Comm_free(&comms[static_cast<size_t>(t)]);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
