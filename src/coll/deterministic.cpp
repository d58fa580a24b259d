// coll/deterministic.hpp: an engine operation of one system MPI collective
// and a local fold -- the inputs gathered (MPI_Igather of the packed bytes at
// the root for Reduce; MPI_Iallgather for Allreduce, every rank folding the
// same bytes in the same order: the same bits everywhere), then the fold in
// rank order with MPI_Reduce_local. One collective, posted when the call is
// made: a second one posted later from the engine's progress could be posted
// in a different order than the application's next collective on another rank
// (MPI matches collectives by their order).
#include "coll/deterministic.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/system_mpi.hpp"
#include "dtmpi/dtmpi.h"
#include "runtime/stats.hpp"
#include "transport/engine.hpp"

namespace dtmpi::coll {

namespace deterministic_detail {
std::atomic<int> g_live{0};
}  // namespace deterministic_detail

namespace {

using deterministic_detail::g_live;
std::atomic<int> g_keyval{MPI_KEYVAL_INVALID};

bool is_deterministic(const void* v) { return v == DTMPI_REDUCTION_DETERMINISTIC; }

// MPI_Comm_dup: a duplicate keeps the choice (MPI_COMM_DUP_FN's semantics).
int copy_attr(MPI_Comm, int, void*, void* in, void* out, int* flag) {
  *static_cast<void**>(out) = in;
  *flag = 1;
  if (is_deterministic(in)) g_live.fetch_add(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}
int delete_attr(MPI_Comm, int, void* value, void*) {
  if (is_deterministic(value)) g_live.fetch_sub(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

class DeterministicOp : public transport::Operation {
 public:
  DeterministicOp(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                  int me, int n, int64_t packed)
      : in_(in), out_(out), count_(count), type_(type), op_(op), root_(root), comm_(comm), me_(me), n_(n),
        packed_(packed) {}

  // Packs this rank's input and posts the gather.
  Status start() {
    mine_.resize(static_cast<size_t>(packed_));
    int pos = 0;
    DTMPI_MPI_CHECK(REAL(MPI_Pack)(in_, count_, type_, mine_.data(), static_cast<int>(packed_), &pos, comm_));
    if (folds()) all_.resize(static_cast<size_t>(packed_) * static_cast<size_t>(n_));
    if (root_ >= 0)
      DTMPI_MPI_CHECK(REAL(MPI_Igather)(mine_.data(), static_cast<int>(packed_), MPI_PACKED, all_.data(),
                                        static_cast<int>(packed_), MPI_PACKED, root_, comm_, &req_));
    else
      DTMPI_MPI_CHECK(REAL(MPI_Iallgather)(mine_.data(), static_cast<int>(packed_), MPI_PACKED, all_.data(),
                                           static_cast<int>(packed_), MPI_PACKED, comm_, &req_));
    return ok_status();
  }

  bool step() override {
    if (error != MPI_SUCCESS) return true;
    int done = 0;
    if (REAL(MPI_Test)(&req_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      error = MPI_ERR_OTHER;
      return true;
    }
    if (!done) return false;
    if (folds()) fold();
    return true;
  }

 private:
  // Allreduce: every rank; Reduce: the root
  bool folds() const { return root_ < 0 || me_ == root_; }

  // MPI's order, the left fold ((x_0 op x_1) op x_2) ...: MPI_Reduce_local(in,
  // inout) computes inout = in op inout, so with acc = x_0 and, for each next
  // rank r, tmp = x_r, MPI_Reduce_local(acc, tmp) leaves acc op x_r in tmp,
  // which becomes acc.
  bool fold() {
    std::vector<char> acc(extent_bytes()), next(extent_bytes());
    char* a = acc.data() - lb_;
    char* t = next.data() - lb_;
    for (int r = 0; r < n_; ++r) {
      int pos = 0;
      if (REAL(MPI_Unpack)(all_.data() + static_cast<size_t>(r) * static_cast<size_t>(packed_),
                           static_cast<int>(packed_), &pos, r == 0 ? a : t, count_, type_, comm_) != MPI_SUCCESS) {
        error = MPI_ERR_OTHER;
        return false;
      }
      if (r == 0) continue;
      if (REAL(MPI_Reduce_local)(a, t, count_, type_, op_) != MPI_SUCCESS) {
        error = MPI_ERR_OP;
        return false;
      }
      std::swap(a, t);
    }
    // into the result buffer by its datatype (any layout)
    int pos = 0;
    if (REAL(MPI_Pack)(a, count_, type_, mine_.data(), static_cast<int>(packed_), &pos, comm_) != MPI_SUCCESS ||
        (pos = 0, REAL(MPI_Unpack)(mine_.data(), static_cast<int>(packed_), &pos, out_, count_, type_, comm_)) !=
            MPI_SUCCESS)
      error = MPI_ERR_OTHER;
    return error == MPI_SUCCESS;
  }

  // Room for `count` elements whatever the type's lb: the true extent span.
  size_t extent_bytes() {
    MPI_Aint tlb = 0, text = 0, lb = 0, ext = 0;
    REAL(MPI_Type_get_true_extent)(type_, &tlb, &text);
    REAL(MPI_Type_get_extent)(type_, &lb, &ext);
    lb_ = tlb;
    const MPI_Aint span = count_ > 0 ? text + (count_ - 1) * ext : 0;
    return static_cast<size_t>(std::max<MPI_Aint>(span, 1));
  }

  const void* in_;
  void* out_;
  int count_;
  MPI_Datatype type_;
  MPI_Op op_;
  int root_;
  MPI_Comm comm_;
  int me_, n_;
  int64_t packed_;
  MPI_Aint lb_ = 0;
  MPI_Request req_ = MPI_REQUEST_NULL;
  std::vector<char> mine_, all_;
};

}  // namespace

Status create_reduction_keyval() {
  int keyval = MPI_KEYVAL_INVALID;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_create_keyval)(copy_attr, delete_attr, &keyval, nullptr));
  g_keyval.store(keyval, std::memory_order_release);
  return ok_status();
}

int reduction_keyval() { return g_keyval.load(std::memory_order_acquire); }

void note_reduction_attr_set(void* value) {
  if (is_deterministic(value)) g_live.fetch_add(1, std::memory_order_relaxed);
}

bool deterministic_slow(MPI_Comm comm) {
  const int keyval = reduction_keyval();
  if (comm == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID) return false;
  void* value = nullptr;
  int flag = 0;
  if (REAL(MPI_Comm_get_attr)(comm, keyval, &value, &flag) != MPI_SUCCESS || !flag) return false;
  return is_deterministic(value);
}

Result<bool> deterministic_reduce(const void* sb, void* rb, int count, MPI_Datatype type, MPI_Op op, int root,
                                  MPI_Comm comm, MPI_Request* req) {
  int inter = 0, me = 0, n = 0, packed = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_test_inter)(comm, &inter));
  if (inter || count < 0) return false;
  DTMPI_MPI_CHECK(REAL(MPI_Comm_rank)(comm, &me));
  DTMPI_MPI_CHECK(REAL(MPI_Comm_size)(comm, &n));
  if (root >= n) return false;  // the system MPI reports the bad root
  DTMPI_MPI_CHECK(REAL(MPI_Pack_size)(count, type, comm, &packed));
  // MPI_IN_PLACE: the input is the result buffer (Allreduce: every rank's;
  // Reduce: the root's)
  const void* in = sb == MPI_IN_PLACE ? rb : sb;
  auto op_ptr = std::make_unique<DeterministicOp>(in, rb, count, type, op, root, comm, me, n, packed);
  DTMPI_TRY(op_ptr->start());
  runtime::count(runtime::Counter::kTunedCollectives);
  if (req) {
    DTMPI_TRY(transport::start_with_request(std::move(op_ptr), req));
    return true;
  }
  DTMPI_TRY(transport::run(*op_ptr, MPI_STATUS_IGNORE));
  return true;
}

}  // namespace dtmpi::coll
