// Accumulates whose element type's size is not its extent: the value-index
// pairs of MPI_MINLOC / MPI_MAXLOC (MPI_DOUBLE_INT: 12 bytes of data, extent
// 16; MPI_SHORT_INT, MPI_LONG_INT, MPI_LONG_DOUBLE_INT; MPI_FLOAT_INT and
// MPI_2INT, whose size is their extent, alongside). MPICH's test
// rma/acc_pairtype found every element past the first wrong on dtmpi's
// windows: the packed elements were reduced as if laid out extent bytes apart.
// For each pair type: MPI_Accumulate with MINLOC (contiguous, fence) and
// MAXLOC (into every other element: a vector target type, lock/unlock), then
// MPI_Get_accumulate with MINLOC returning the old values; every element
// checked against values computed here. Two ranks; exits 1 on a mismatch.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int g_rank = 0;
int g_failures = 0;

template <class V>
struct Pair {
  V value;
  int index;
};

template <class V>
void run(const char* name, MPI_Datatype type) {
  constexpr int kN = 6;
  std::vector<Pair<V>> target(kN), origin(kN), old(kN);
  for (int i = 0; i < kN; ++i) {
    target[i] = {static_cast<V>(10 + i), 100 + i};
    origin[i] = {static_cast<V>(i % 2 == 0 ? 5 + i : 20 + i), 200 + i};  // even: smaller, odd: larger
  }
  MPI_Win win;
  MPI_Win_create(target.data(), static_cast<MPI_Aint>(kN * sizeof(Pair<V>)), static_cast<int>(sizeof(Pair<V>)),
                 MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  // MINLOC, contiguous, in a fence epoch
  MPI_Win_fence(0, win);
  if (g_rank == 0) MPI_Accumulate(origin.data(), kN, type, 1, 0, kN, type, MPI_MINLOC, win);
  MPI_Win_fence(0, win);
  // MAXLOC into elements 0, 2, 4 (a vector target), passive target
  MPI_Datatype every_other;
  MPI_Type_vector(kN / 2, 1, 2, type, &every_other);
  MPI_Type_commit(&every_other);
  if (g_rank == 0) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    MPI_Accumulate(origin.data() + 1, kN / 2, type, 1, 0, 1, every_other, MPI_MAXLOC, win);
    MPI_Win_unlock(1, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // MINLOC again with the old values back
  MPI_Win_fence(0, win);
  const Pair<V> low[kN] = {{static_cast<V>(1), 300}, {static_cast<V>(1), 301}, {static_cast<V>(1), 302},
                           {static_cast<V>(1), 303}, {static_cast<V>(1), 304}, {static_cast<V>(1), 305}};
  if (g_rank == 0) MPI_Get_accumulate(low, kN, type, old.data(), kN, type, 1, 0, kN, type, MPI_MINLOC, win);
  MPI_Win_fence(0, win);
  MPI_Type_free(&every_other);
  MPI_Win_free(&win);

  // the expected state after the first two epochs (both ranks compute it
  // from the initial values)
  std::vector<Pair<V>> after(kN);
  for (int i = 0; i < kN; ++i) {
    const Pair<V> init = {static_cast<V>(10 + i), 100 + i};
    after[i] = origin[i].value < init.value ? origin[i] : init;  // MINLOC (no ties here)
  }
  for (int i = 0; i < kN / 2; ++i) {  // MAXLOC of origin[1 + i] into element 2i
    const Pair<V>& o = origin[static_cast<size_t>(1 + i)];
    Pair<V>& t = after[static_cast<size_t>(2 * i)];
    if (o.value > t.value || (o.value == t.value && o.index < t.index)) t = o;
  }
  int bad = 0;
  if (g_rank == 1)
    for (int i = 0; i < kN; ++i)
      if (target[i].value != static_cast<V>(1) || target[i].index != 300 + i) ++bad;  // the last MINLOC won
  if (g_rank == 0)
    for (int i = 0; i < kN; ++i)
      if (old[i].value != after[i].value || old[i].index != after[i].index) ++bad;
  if (bad) ++g_failures;
  std::printf("rank %d %-20s %s\n", g_rank, name, bad ? "WRONG" : "ok");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (g_rank == 0) std::printf("needs 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  MPI_Win probe;  // the plain system MPI may not make windows here (Open MPI 4.1's default components)
  int ok = MPI_Win_create(nullptr, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &probe) == MPI_SUCCESS;
  if (!ok) {
    if (g_rank == 0) std::printf("the MPI cannot create windows here: skipped\n");
    MPI_Finalize();
    return 77;
  }
  MPI_Win_free(&probe);
  run<float>("MPI_FLOAT_INT", MPI_FLOAT_INT);
  run<double>("MPI_DOUBLE_INT", MPI_DOUBLE_INT);
  run<long>("MPI_LONG_INT", MPI_LONG_INT);
  run<short>("MPI_SHORT_INT", MPI_SHORT_INT);
  run<long double>("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT);
  run<int>("MPI_2INT", MPI_2INT);
  int all = 0;
  MPI_Allreduce(&g_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%s\n", all ? "FAILED" : "ok: all pair types");
  MPI_Finalize();
  return all ? 1 : 0;
}
