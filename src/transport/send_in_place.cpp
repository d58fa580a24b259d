// Sends "in place" (collectives' pooled pieces read where they lie over CUDA
// IPC; transfer.hpp, send_in_place).
#include "base/log.hpp"
#include "base/trace.hpp"
#include "runtime/config.hpp"
#include "runtime/stats.hpp"
#include "transport/peers.hpp"
#include "transport/send_tail.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::transport {

namespace {

// In the host test mode, host memory is "sent in place" too: the descriptor
// has no region, so the receiver asks for the bytes and the sender sends them
// from where they lie -- the protocol, the requests and the fallback run in
// CI without GPUs.
bool in_place_possible(int64_t bytes, const rt::PointerInfo& info, int dest_world) {
  const std::string& m = rt::config().method;
  const bool host_test = rt::test_hooks().stage_host && !rt::on_gpu(info);
  return (m == "auto" || m == "device") && bytes >= kInPlaceMin && bytes <= INT32_MAX && dest_world >= 0 &&
         peers_ready() && descriptors_possible() &&
         (host_test || (info.kind == rt::MemKind::kDevice && !mpi_takes_device_memory() && ipc_possible(dest_world)));
}

}  // namespace

Result<bool> send_in_place(const void* pooled, int64_t offset, int64_t bytes, const rt::PointerInfo& info, int dest,
                           int tag, MPI_Comm comm, MPI_Request* request) {
  const int dest_world = world_rank_of(comm, dest);
  if (!in_place_possible(bytes, info, dest_world)) return false;
  Descriptor d;
  d.wire = Wire::kIpc;  // with no region in the host test mode
  if (rt::on_gpu(info)) {
    auto exported = ipc_export(pooled, true);  // cached per pool buffer
    if (!exported) return false;
    d.region = exported.value();
    d.region.offset += offset;
    // raised behind the work queued before it (the caller's batched pack; with
    // DTMPI_GPU_ORDER=legacy the legacy default stream's work too)
    auto raised = ipc_signal_raise(info.device);
    if (!raised) {
      DTMPI_LOG(kInfo, "no ready signal for a send in place (%s): sent the usual way", raised.error().what.c_str());
      return false;
    }
    d.ready = raised.value();
  }
  auto tail = begin_transfer(bytes, dest_world, tag, d);
  tail->in_place = static_cast<const char*>(pooled) + offset;
  tail->in_place_device = rt::on_gpu(info) ? info.device : -1;
  tail->ready = d.ready;
  MPI_Request r = MPI_REQUEST_NULL;
  DTMPI_TRY(announce(*tail, d, dest, tag, comm, false, &r, tail->descriptor_buf));
  tail->reqs.push_back(r);
  rt::count(rt::Counter::kMultiSends);
  rt::count(rt::Counter::kInPlaceSends);
  DTMPI_TRACE("send: in place");
  DTMPI_TRY(start_with_request(std::move(tail), request));
  return true;
}


}  // namespace dtmpi::transport
