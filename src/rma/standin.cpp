#include "rma/standin.hpp"
#include "rma/window.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "base/system_mpi.hpp"
#include "rma/move.hpp"
#include "rma/named.hpp"
#include "runtime/pointer_kind.hpp"
#include "transport/engine.hpp"
#include "transport/peers.hpp"
#include "type/registry.hpp"

namespace dtmpi::rma {
namespace {

struct Entry {
  int target = 0;
  std::vector<unsigned char> host;
  std::shared_ptr<const type::PackPlan> plan;
  int64_t count = 0;
  void* user = nullptr;
  runtime::PointerInfo info;
  bool write_back = false;
};

struct Table {
  std::mutex mu;
  std::map<uintptr_t, std::vector<std::shared_ptr<Entry>>> by_window;
};
Table& table() {
  static Table* t = new Table;
  return *t;
}

Status finish(Entry& e) {
  if (!e.write_back) return ok_status();
  return unpack_any(*e.plan, e.count, e.host.data(), e.user, e.info);
}

// The request of an MPI_R* operation with a result stand-in: complete when
// the system MPI's request is, after the write-back.
class WrappedRequest final : public transport::Operation {
 public:
  WrappedRequest(MPI_Request real, std::shared_ptr<Entry> e) : real_(real), entry_(std::move(e)) {}
  bool step() override {
    int done = 0;
    if (REAL(MPI_Test)(&real_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      error = MPI_ERR_OTHER;
      return true;
    }
    if (!done) return false;
    Status s = finish(*entry_);
    entry_->write_back = false;  // done: the window's next synchronization only releases it
    if (!s) error = s.error().code < 0 ? MPI_ERR_OTHER : s.error().code;
    return true;
  }

 private:
  MPI_Request real_;
  std::shared_ptr<Entry> entry_;
};

}  // namespace

bool needs_stand_in(const void* buf) {
  return buf && buf != MPI_BOTTOM && runtime::on_gpu(runtime::pointer_info(buf)) &&
         !transport::mpi_takes_device_memory();
}

Result<StandIn> stand_in(MPI_Win win, int target, const void* buf, int count, MPI_Datatype type, bool read,
                         bool write_back) {
  auto plan = type::plan_for(type);
  if (!plan) return Error{MPI_ERR_TYPE, "a GPU buffer in a one-sided operation with a datatype dtmpi cannot plan"};
  auto e = std::make_shared<Entry>();
  e->target = target;
  e->plan = plan;
  e->count = count;
  e->user = const_cast<void*>(buf);
  e->info = runtime::pointer_info(buf);
  e->write_back = write_back;
  const int64_t bytes = plan->size * count;
  e->host.resize(static_cast<size_t>(bytes));
  if (read) DTMPI_TRY(pack_any(*plan, count, buf, e->info, e->host.data()));
  StandIn s{e->host.data(), static_cast<int>(bytes), MPI_BYTE};
  auto el = element_type(type);
  int el_size = 0;
  if (el && REAL(MPI_Type_size)(el.value(), &el_size) == MPI_SUCCESS && el_size > 0 && bytes % el_size == 0) {
    s.type = el.value();
    s.count = static_cast<int>(bytes / el_size);
  }
  Table& t = table();
  std::lock_guard lock(t.mu);
  t.by_window[handle_bits(win)].push_back(std::move(e));
  return s;
}

Status stand_ins_completed(MPI_Win win, int target) {
  std::vector<std::shared_ptr<Entry>> done;
  {
    Table& t = table();
    std::lock_guard lock(t.mu);
    auto it = t.by_window.find(handle_bits(win));
    if (it == t.by_window.end()) return ok_status();
    auto& v = it->second;
    for (size_t i = 0; i < v.size();) {
      if (target == kAllTargets || v[i]->target == target) {
        done.push_back(std::move(v[i]));
        v[i] = std::move(v.back());
        v.pop_back();
      } else {
        ++i;
      }
    }
    if (v.empty()) t.by_window.erase(it);
  }
  Status first = ok_status();
  for (auto& e : done) first = first_error(std::move(first), finish(*e));
  return first;
}

Status wrap_request(MPI_Win win, MPI_Request* request) {
  std::shared_ptr<Entry> e;
  {
    Table& t = table();
    std::lock_guard lock(t.mu);
    auto it = t.by_window.find(handle_bits(win));
    if (it == t.by_window.end() || it->second.empty()) return ok_status();
    e = it->second.back();
  }
  return transport::start_with_request(std::make_unique<WrappedRequest>(*request, e), request);
}

}  // namespace dtmpi::rma
