// One-sided operations whose messages are large (64 KiB and up: their bytes
// come from the runtime's staging pool -- pinned host memory where a GPU is
// in use -- instead of a vector, rma/message_bytes.hpp): put, get,
// accumulate (MPI_SUM) and get_accumulate of 1 and 3 MiB regions, contiguous
// and strided, in fence and lock epochs, between 2 ranks on host windows
// served by dtmpi (DTMPI_RMA=all). Every element is checked against values
// computed here; a reused pooled buffer holding an earlier message's bytes,
// or one released while its send is in flight, shows as wrong values.
// --device: the window in GPU memory (with DTMPI_RANKS_PER_NODE=1 every
// operation is a message, and the target applies the large accumulates by
// one kernel reading the pinned message in place); exits 77 without a GPU.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#ifdef DTMPI_TEST_CUDA
#include <cuda_runtime.h>
#endif

namespace {

int g_rank = 0;
int g_failures = 0;

void expect(bool ok, const char* what, long i) {
  if (!ok && g_failures++ < 5) std::printf("rank %d: %s wrong at element %ld\n", g_rank, what, i);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool device = argc > 1 && std::string(argv[1]) == "--device";
  if (size != 2) {
    if (g_rank == 0) std::printf("needs 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  const long n = 1L << 19;  // doubles in the window: 4 MiB
  const size_t win_bytes = static_cast<size_t>(n) * sizeof(double);
  // `window`: the window's values as this rank sees them (a copy of the GPU
  // memory with --device), read after each synchronization
  std::vector<double> window(static_cast<size_t>(n));
  double* mem = window.data();
#ifdef DTMPI_TEST_CUDA
  int gpus = 0;
  if (device && (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0)) {
    if (g_rank == 0) std::printf("no GPU: skipped\n");
    MPI_Finalize();
    return 77;
  }
  if (device && cudaMalloc(&mem, win_bytes) != cudaSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
  auto load = [&] { if (device) cudaMemcpy(window.data(), mem, win_bytes, cudaMemcpyDeviceToHost); };
  auto store = [&] { if (device) cudaMemcpy(mem, window.data(), win_bytes, cudaMemcpyHostToDevice); };
#else
  if (device) {
    if (g_rank == 0) std::printf("built without CUDA: skipped\n");
    MPI_Finalize();
    return 77;
  }
  auto load = [] {};
  auto store = [] {};
#endif
  for (long i = 0; i < n; ++i) window[static_cast<size_t>(i)] = g_rank * 1e7 + static_cast<double>(i);
  store();
  MPI_Win win;
  MPI_Win_create(mem, static_cast<MPI_Aint>(win_bytes), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  const int peer = 1 - g_rank;
  MPI_Datatype every_other;  // n/2 doubles at stride 2: a 4 MiB span, 2 MiB of data
  MPI_Type_vector(static_cast<int>(n / 2), 1, 2, MPI_DOUBLE, &every_other);
  MPI_Type_commit(&every_other);
  for (int round = 0; round < 3; ++round) {
    // put 3 MiB contiguous at the front of the peer's window (fence)
    const long put_n = 3L << 17;
    std::vector<double> src(static_cast<size_t>(put_n));
    for (long i = 0; i < put_n; ++i) src[static_cast<size_t>(i)] = round * 1e6 + g_rank * 1e5 + static_cast<double>(i);
    MPI_Win_fence(0, win);
    MPI_Put(src.data(), static_cast<int>(put_n), MPI_DOUBLE, peer, 0, static_cast<int>(put_n), MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    load();
    for (long i = 0; i < put_n; ++i)
      expect(window[static_cast<size_t>(i)] == round * 1e6 + peer * 1e5 + static_cast<double>(i), "put", i);
    // get the peer's every other element (a 2 MiB reply) under a lock
    std::vector<double> got(static_cast<size_t>(n / 2), -1);
    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
    MPI_Get(got.data(), static_cast<int>(n / 2), MPI_DOUBLE, peer, 0, 1, every_other, win);
    MPI_Win_unlock(peer, win);
    for (long i = 0; i < n / 2; ++i) {
      const long at = 2 * i;
      const double want = at < put_n ? round * 1e6 + g_rank * 1e5 + static_cast<double>(at)
                                     : peer * 1e7 + static_cast<double>(at);
      expect(got[static_cast<size_t>(i)] == want, "get", i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // accumulate 1 into every other element of the peer's window, then
    // get_accumulate 2 there fetching the old values (exclusive lock)
    std::vector<double> ones(static_cast<size_t>(n / 2), 1.0), twos(static_cast<size_t>(n / 2), 2.0),
        old(static_cast<size_t>(n / 2), -1);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
    MPI_Accumulate(ones.data(), static_cast<int>(n / 2), MPI_DOUBLE, peer, 0, 1, every_other, MPI_SUM, win);
    MPI_Get_accumulate(twos.data(), static_cast<int>(n / 2), MPI_DOUBLE, old.data(), static_cast<int>(n / 2),
                       MPI_DOUBLE, peer, 0, 1, every_other, MPI_SUM, win);
    MPI_Win_unlock(peer, win);
    for (long i = 0; i < n / 2; ++i) expect(old[static_cast<size_t>(i)] == got[static_cast<size_t>(i)] + 1, "old", i);
    MPI_Barrier(MPI_COMM_WORLD);
    load();
    for (long i = 0; i < n; ++i) {
      const double base = i < put_n ? round * 1e6 + peer * 1e5 + static_cast<double>(i) : g_rank * 1e7 + static_cast<double>(i);
      expect(window[static_cast<size_t>(i)] == base + (i % 2 == 0 ? 3 : 0), "accumulate", i);
    }
    // the next round starts from the values its checks expect
    for (long i = 0; i < n; ++i) window[static_cast<size_t>(i)] = g_rank * 1e7 + static_cast<double>(i);
    store();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Type_free(&every_other);
  MPI_Win_free(&win);
#ifdef DTMPI_TEST_CUDA
  if (device) cudaFree(mem);
#endif
  int all = 0;
  MPI_Allreduce(&g_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s\n", all ? "FAILED" : "ok: large one-sided messages");
  MPI_Finalize();
  return all ? 1 : 0;
}
