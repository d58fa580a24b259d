// A random one-sided program whose results do not depend on timing, printed
// as one hash line per rank and round, so that runs can be compared byte for
// byte: MPICH's own RMA on host memory (the oracle; its output, which depends
// on no MPI, is kept in tests/rma/expected/) against dtmpi's (DTMPI_RMA=all,
// host memory, created or dynamic windows) and against dtmpi's on GPU memory
// (--device).
//
// Every round picks a synchronization mode shared by all ranks -- fence,
// post/start/complete/wait, lock/unlock per target (shared or exclusive),
// lock_all with flushes -- and each rank issues random operations with random
// derived datatypes on both sides (vector, indexed, subarray, struct, resized
// with count > 1, contiguous). Conflicts are avoided as the standard requires:
// each origin writes and reads only its own slice of every target window, in
// regions no other operation of the epoch touches; all origins accumulate
// MPI_SUM into a shared area (integer sums commute); fetch-and-op and
// compare-and-swap use a slot per origin. Get, get-accumulate, fetch-and-op
// and compare-and-swap results are hashed too.
//
// usage: rma_program [--seed N] [--rounds N] [--device [--host-buffers]] [--dynamic] [--large-count] [--dump]
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#ifdef DTMPI_TEST_CUDA
#include <cuda_runtime.h>
#endif

namespace {

constexpr int kRegion = 48;      // ints per operation region
constexpr int kOpsPerEpoch = 6;  // regions per origin slice
constexpr int kShared = 64;      // ints of the shared accumulate area

int g_rank = 0, g_size = 1;
bool g_device = false;
// --large-count: the MPI-4 _c forms of every call that has one (MPICH 4);
// the results must be the oracle's all the same
bool g_large = false;
#if MPI_VERSION >= 4
#define RMA_CALL(fn, ...) (g_large ? fn##_c(__VA_ARGS__) : fn(__VA_ARGS__))
#else
#define RMA_CALL(fn, ...) fn(__VA_ARGS__)
#endif

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "rank %d: %s failed with %d\n", g_rank, what, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#define CHECK(call) check((call), #call)

// --- memory: host or device ------------------------------------------------

// --host-buffers (with --device): window memory on the GPU, every origin and
// result buffer in host memory (the accumulates' staged kernel path)
bool g_host_buffers = false;

// Window memory (`window`) or an origin/result buffer.
void* alloc(size_t bytes, bool window = false) {
#ifdef DTMPI_TEST_CUDA
  if (g_device && (window || !g_host_buffers)) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
  }
#endif
  (void)window;
  return std::calloc(1, bytes);
}
#ifdef DTMPI_TEST_CUDA
bool device_memory(const void* p) {
  cudaPointerAttributes a{};
  return g_device && cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
}
#endif
void release(void* p) {
#ifdef DTMPI_TEST_CUDA
  if (device_memory(p)) {
    cudaFree(p);
    return;
  }
#endif
  std::free(p);
}
void to_mem(void* dst, const void* src, size_t bytes) {
#ifdef DTMPI_TEST_CUDA
  if (device_memory(dst)) {
    cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}
void from_mem(void* dst, const void* src, size_t bytes) {
#ifdef DTMPI_TEST_CUDA
  if (device_memory(src)) {
    cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

uint64_t fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// --- random datatypes of exactly n ints within `span` ints -----------------

struct Typed {
  MPI_Datatype type;
  int count;
  bool free_it;
};

Typed contiguous(int n) { return {MPI_INT, n, false}; }

Typed random_type(std::mt19937& rng, int n, int span) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<int> divisors;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) divisors.push_back(d);
  MPI_Datatype t = MPI_DATATYPE_NULL;
  int count = 1;
  switch (pick(0, 5)) {
    case 0: return contiguous(n);
    case 1: {  // vector
      const int bl = divisors[static_cast<size_t>(pick(0, static_cast<int>(divisors.size()) - 1))];
      const int nb = n / bl, stride = bl + pick(0, 3);
      if ((nb - 1) * stride + bl > span) return contiguous(n);
      CHECK(MPI_Type_vector(nb, bl, stride, MPI_INT, &t));
      break;
    }
    case 2: {  // indexed: a random partition of n with gaps
      std::vector<int> lens, disps;
      int left = n, at = pick(0, 2);
      while (left > 0) {
        const int l = std::min(left, pick(1, 5));
        lens.push_back(l);
        disps.push_back(at);
        at += l + pick(0, 2);
        left -= l;
      }
      if (at > span) return contiguous(n);
      CHECK(MPI_Type_indexed(static_cast<int>(lens.size()), lens.data(), disps.data(), MPI_INT, &t));
      break;
    }
    case 3: {  // 2-D subarray in C order
      const int cols = divisors[static_cast<size_t>(pick(0, static_cast<int>(divisors.size()) - 1))];
      const int rows = n / cols, full_cols = cols + pick(0, 2), full_rows = rows + pick(0, 1);
      if (full_rows * full_cols > span) return contiguous(n);
      int sizes[2] = {full_rows, full_cols}, subs[2] = {rows, cols};
      int starts[2] = {full_rows - rows, full_cols - cols};  // padding before the data: lb != true lb
      CHECK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
      break;
    }
    case 4: {  // struct of int blocks at byte displacements
      std::vector<int> lens;
      std::vector<MPI_Aint> disps;
      std::vector<MPI_Datatype> types;
      int left = n, at = 0;
      while (left > 0) {
        const int l = std::min(left, pick(1, 4));
        lens.push_back(l);
        disps.push_back(static_cast<MPI_Aint>(at) * 4);
        types.push_back(MPI_INT);
        at += l + pick(0, 1);
        left -= l;
      }
      if (at > span) return contiguous(n);
      CHECK(MPI_Type_create_struct(static_cast<int>(lens.size()), lens.data(), disps.data(), types.data(), &t));
      break;
    }
    default: {  // resized vector, count > 1
      if (n % 2 != 0) return contiguous(n);
      const int per = (n % 4 == 0) ? 4 : 2;  // ints per element: 2 blocks of per/2
      const int bl = per / 2;
      MPI_Datatype v;
      CHECK(MPI_Type_vector(2, bl, bl + 1, MPI_INT, &v));
      const int extent = 2 * bl + 2;
      count = n / per;
      if (count * extent > span) {
        MPI_Type_free(&v);
        return contiguous(n);
      }
      CHECK(MPI_Type_create_resized(v, 0, extent * 4, &t));
      MPI_Type_free(&v);
      break;
    }
  }
  CHECK(MPI_Type_commit(&t));
  return {t, count, true};
}

void free_type(Typed& t) {
  if (t.free_it) MPI_Type_free(&t.type);
}

// --- the program -------------------------------------------------------------

struct Layout {
  int slice = kRegion * kOpsPerEpoch;  // ints per origin slice
  int shared_at() const { return slice * g_size; }
  int slots_at() const { return shared_at() + kShared; }  // 2 ints per origin: fetch-and-op, CAS
  int total() const { return slots_at() + 2 * g_size; }
};

enum Mode { kFence, kPscw, kLock, kLockAll, kModes };
const char* mode_name[] = {"fence", "pscw", "lock", "lock_all"};

struct Pending {
  void* result;  // device or host memory
  size_t bytes;
};

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  int rounds = 8;
  bool dynamic = false, dump = false;  // --dump: every window value too (to find a difference)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--device") g_device = true;
    else if (a == "--dynamic") dynamic = true;
    else if (a == "--large-count") g_large = true;
    else if (a == "--host-buffers") g_host_buffers = true;
    else if (a == "--dump") dump = true;
    else {
      std::fprintf(stderr,
                   "usage: rma_program [--seed N] [--rounds N] [--device [--host-buffers]] [--dynamic] [--large-count] "
                   "[--dump]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#if MPI_VERSION < 4
  if (g_large) {
    if (g_rank == 0) std::printf("no MPI-4 large-count forms in this MPI: skipped\n");
    MPI_Finalize();
    return 77;
  }
#endif
#ifdef DTMPI_TEST_CUDA
  if (g_device) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
      if (g_rank == 0) std::printf("no GPU: skipped\n");
      MPI_Finalize();
      return 77;
    }
  }
#else
  if (g_device) {
    if (g_rank == 0) std::printf("built without CUDA: skipped\n");
    MPI_Finalize();
    return 77;
  }
#endif
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const Layout L;
  const size_t win_bytes = static_cast<size_t>(L.total()) * sizeof(int);
  std::vector<int> init(static_cast<size_t>(L.total()));
  for (int i = 0; i < L.total(); ++i) init[static_cast<size_t>(i)] = g_rank * 100000 + i;
  void* mem = alloc(win_bytes, true);
  to_mem(mem, init.data(), win_bytes);
  MPI_Win win;
  std::vector<MPI_Aint> bases(static_cast<size_t>(g_size), 0);
  if (dynamic) {
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK(MPI_Win_attach(win, mem, static_cast<MPI_Aint>(win_bytes)));
    MPI_Aint mine;
    CHECK(MPI_Get_address(mem, &mine));
    CHECK(MPI_Allgather(&mine, 1, MPI_AINT, bases.data(), 1, MPI_AINT, MPI_COMM_WORLD));
  } else {
    CHECK(RMA_CALL(MPI_Win_create, mem, static_cast<MPI_Aint>(win_bytes), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win));
  }
  CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  // target displacement of int index i at rank t
  auto disp = [&](int t, int i) -> MPI_Aint {
    return dynamic ? bases[static_cast<size_t>(t)] + static_cast<MPI_Aint>(i) * 4 : i;
  };
  std::vector<int> cas_value(static_cast<size_t>(g_size));
  for (int t = 0; t < g_size; ++t) cas_value[static_cast<size_t>(t)] = t * 100000 + L.slots_at() + 2 * g_rank + 1;

  std::mt19937 common(seed);                // the same on every rank: the epochs' shape
  std::mt19937 mine(seed * 7919u + static_cast<unsigned>(g_rank));  // this rank's operations
  auto pick = [&](std::mt19937& r, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(r); };
  MPI_Group world_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);

  for (int round = 0; round < rounds; ++round) {
    const Mode mode = static_cast<Mode>(pick(common, 0, kModes - 1));
    const bool exclusive = pick(common, 0, 1) == 1;
    std::vector<Pending> pending;
    std::vector<Typed> types;
    std::vector<void*> buffers;
    uint64_t result_hash = 0;

    // one target's operations in this epoch
    auto operate = [&](int t) {
      const int nops = pick(mine, 1, kOpsPerEpoch);
      for (int k = 0; k < nops; ++k) {
        const int n = pick(mine, 1, 24);
        const int region = g_rank * L.slice + k * kRegion;
        Typed tt = random_type(mine, n, kRegion), ot = random_type(mine, n, kRegion);
        types.push_back(tt);
        types.push_back(ot);
        std::vector<int> data(kRegion);
        for (int& v : data) v = pick(mine, -1000, 1000);
        void* obuf = alloc(kRegion * sizeof(int));
        to_mem(obuf, data.data(), kRegion * sizeof(int));
        buffers.push_back(obuf);
        const int op = pick(mine, 0, 5);
        const bool request = pick(mine, 0, 1) == 1;
        MPI_Request req = MPI_REQUEST_NULL;
        if (op == 0) {  // put
          if (request)
            CHECK(RMA_CALL(MPI_Rput, obuf, ot.count, ot.type, t, disp(t, region), tt.count, tt.type, win, &req));
          else
            CHECK(RMA_CALL(MPI_Put, obuf, ot.count, ot.type, t, disp(t, region), tt.count, tt.type, win));
        } else if (op == 1) {  // get
          if (request)
            CHECK(RMA_CALL(MPI_Rget, obuf, ot.count, ot.type, t, disp(t, region), tt.count, tt.type, win, &req));
          else
            CHECK(RMA_CALL(MPI_Get, obuf, ot.count, ot.type, t, disp(t, region), tt.count, tt.type, win));
          pending.push_back({obuf, kRegion * sizeof(int)});
        } else if (op == 2) {  // accumulate into my region
          MPI_Op o = pick(mine, 0, 1) ? MPI_SUM : MPI_REPLACE;
          if (request)
            CHECK(RMA_CALL(MPI_Raccumulate, obuf, ot.count, ot.type, t, disp(t, region), tt.count, tt.type, o, win,
                           &req));
          else
            CHECK(RMA_CALL(MPI_Accumulate, obuf, ot.count, ot.type, t, disp(t, region), tt.count, tt.type, o, win));
        } else if (op == 3) {  // get_accumulate into my region, result in a third layout
          void* rbuf = alloc(kRegion * sizeof(int));
          to_mem(rbuf, std::vector<int>(kRegion, -7).data(), kRegion * sizeof(int));
          buffers.push_back(rbuf);
          Typed rt = random_type(mine, n, kRegion);
          types.push_back(rt);
          MPI_Op o = pick(mine, 0, 2) == 0 ? MPI_NO_OP : (pick(mine, 0, 1) ? MPI_MAX : MPI_BXOR);
          if (request)
            CHECK(RMA_CALL(MPI_Rget_accumulate, obuf, ot.count, ot.type, rbuf, rt.count, rt.type, t, disp(t, region),
                           tt.count, tt.type, o, win, &req));
          else
            CHECK(RMA_CALL(MPI_Get_accumulate, obuf, ot.count, ot.type, rbuf, rt.count, rt.type, t, disp(t, region),
                           tt.count, tt.type, o, win));
          pending.push_back({rbuf, kRegion * sizeof(int)});
        } else if (op == 4) {  // everyone's sum into the shared area
          Typed st = random_type(mine, n, kShared);
          types.push_back(st);
          CHECK(RMA_CALL(MPI_Accumulate, obuf, ot.count, ot.type, t, disp(t, L.shared_at()), st.count, st.type, MPI_SUM,
                         win));
        } else {  // fetch-and-op on my slot, then compare-and-swap on my other slot
          void* rbuf = alloc(2 * sizeof(int));
          buffers.push_back(rbuf);
          CHECK(MPI_Fetch_and_op(obuf, rbuf, MPI_INT, t, disp(t, L.slots_at() + 2 * g_rank), MPI_SUM, win));
          if (k == 0) {  // one CAS per target and epoch: it knows the slot's value
            const int next = round * 1000 + g_rank * 10 + t;
            const bool hit = pick(mine, 0, 3) != 0;
            const int compare = hit ? cas_value[static_cast<size_t>(t)] : cas_value[static_cast<size_t>(t)] + 1;
            void* ob = alloc(sizeof(int));
            void* cb = alloc(sizeof(int));
            to_mem(ob, &next, sizeof next);
            to_mem(cb, &compare, sizeof compare);
            buffers.push_back(ob);
            buffers.push_back(cb);
            CHECK(MPI_Compare_and_swap(ob, cb, static_cast<char*>(rbuf) + sizeof(int), MPI_INT, t,
                                       disp(t, L.slots_at() + 2 * g_rank + 1), win));
            if (hit) cas_value[static_cast<size_t>(t)] = next;
          }
          pending.push_back({rbuf, (k == 0 ? 2 : 1) * sizeof(int)});
        }
        // an MPI_R* request completes locally: waited for here, inside the epoch
        if (req != MPI_REQUEST_NULL) CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
      }
    };
    // the targets of this rank in this round (every rank a target at most once)
    std::vector<int> targets;
    for (int t = 0; t < g_size; ++t)
      if (pick(mine, 0, 2) != 0) targets.push_back(t);

    switch (mode) {
      case kFence:
        CHECK(MPI_Win_fence(0, win));
        for (int t : targets) operate(t);
        CHECK(MPI_Win_fence(0, win));
        break;
      case kPscw:
        CHECK(MPI_Win_post(world_group, 0, win));
        CHECK(MPI_Win_start(world_group, 0, win));
        for (int t : targets) operate(t);
        CHECK(MPI_Win_complete(win));
        CHECK(MPI_Win_wait(win));
        break;
      case kLock:
        for (int t : targets) {
          CHECK(MPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, win));
          operate(t);
          CHECK(MPI_Win_unlock(t, win));
        }
        break;
      case kLockAll:
        CHECK(MPI_Win_lock_all(0, win));
        for (int t : targets) {
          operate(t);
          if (pick(mine, 0, 1)) CHECK(MPI_Win_flush(t, win));
          else CHECK(MPI_Win_flush_local(t, win));
        }
        if (pick(mine, 0, 1)) CHECK(MPI_Win_flush_all(win));
        CHECK(MPI_Win_unlock_all(win));
        break;
      default: break;
    }
    for (Pending& p : pending) {
      std::vector<unsigned char> host(p.bytes);
      from_mem(host.data(), p.result, p.bytes);
      result_hash = fnv(host.data(), host.size(), result_hash);
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    // this rank's window as the epoch left it (a lock on itself makes the
    // public copy the private one in the separate model)
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, g_rank, 0, win));
    std::vector<int> now(static_cast<size_t>(L.total()));
    from_mem(now.data(), mem, win_bytes);
    CHECK(MPI_Win_unlock(g_rank, win));
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    std::printf("round %d mode %s rank %d window %016llx results %016llx\n", round, mode_name[mode], g_rank,
                static_cast<unsigned long long>(fnv(now.data(), win_bytes)),
                static_cast<unsigned long long>(result_hash));
    if (dump)
      for (int i = 0; i < L.total(); ++i)
        std::printf("round %d rank %d [%d] = %d\n", round, g_rank, i, now[static_cast<size_t>(i)]);
    for (Typed& t : types) free_type(t);
    for (void* b : buffers) release(b);
  }
  if (dynamic) CHECK(MPI_Win_detach(win, mem));
  CHECK(MPI_Win_free(&win));
  MPI_Group_free(&world_group);
  release(mem);
  MPI_Finalize();
  return 0;
}
