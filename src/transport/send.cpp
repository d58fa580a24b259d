// The sending half of the multi-message methods (the method choice: method.cpp).
#include <algorithm>

#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "pack/cpu_pack.hpp"
#include "runtime/config.hpp"
#include "runtime/stream_pack.hpp"
#include "runtime/streams.hpp"
#include "transport/ledger.hpp"
#include "runtime/stats.hpp"
#include "transport/batched_sends.hpp"
#include "transport/peers.hpp"
#include "transport/predict.hpp"
#include "transport/send_tail.hpp"
#include "transport/transfer.hpp"

namespace dtmpi::transport {

namespace rt = dtmpi::runtime;

namespace {

// The errors a failed GPU step of a send returns (logged once, at the boundary).
Error packing_failed(const Error& e) { return Error{MPI_ERR_OTHER, "packing a GPU send buffer failed: " + e.what}; }
Error copy_failed(const Error& e) { return Error{MPI_ERR_OTHER, "device-to-host copy failed: " + e.what}; }

}  // namespace

bool SendTail::step() {
  if (ack_req != MPI_REQUEST_NULL) {
    int flag = 0;
    REAL(MPI_Test)(&ack_req, &flag, MPI_STATUS_IGNORE);
    if (!flag) return false;
    DTMPI_TRACE("send: ack received");
    if (const Ack a = static_cast<Ack>(ack); a == Ack::kRead || a == Ack::kReadGated || a == Ack::kReadSameGpu)
      mark_ipc_read_by(peer_world, a == Ack::kReadGated, a == Ack::kReadSameGpu);
    if (static_cast<Ack>(ack) == Ack::kSendPayload) {
      // the receiver cannot map this over IPC: the packed bytes go to it on
      // the private communicator, and later transfers to it are pipelined
      const void* packed = device.ptr ? device.ptr : in_place_device >= 0 ? in_place : nullptr;
      const int packed_device = device.ptr ? device.device : in_place_device;
      if (packed) mark_no_ipc(peer_world);
      if (in_place && !packed) {  // host bytes (the host test mode): sent from where they lie
        reqs.emplace_back();
        REAL(MPI_Isend)(in_place, static_cast<int>(bytes), MPI_PACKED, peer_world, data_tag(id), private_comm(), &reqs.back());
        return false;
      }
      if (packed && !staging.ptr) {
        auto st = rt::acquire_staging(static_cast<size_t>(bytes));
        auto m = st ? rt::copy_async(st.value().ptr, packed, static_cast<size_t>(bytes), packed_device)
                    : Result<rt::GpuMarker>(st.error());
        if (!m) {
          DTMPI_LOG(kError, "staging a send for the fallback path failed: %s", m.error().what.c_str());
          if (st) rt::release_staging(st.value());
          return true;  // the receiver waits in vain: nothing else can be done
        }
        staging = st.value();
        rt::release_marker(m.value());
        if (!rt::wait_stream(packed_device)) DTMPI_LOG(kError, "staging a send for the fallback path failed");
      }
      reqs.emplace_back();
      REAL(MPI_Isend)(staging.ptr, static_cast<int>(bytes), MPI_PACKED, peer_world, data_tag(id), private_comm(),
                 &reqs.back());
    }
  }
  if (reqs.empty()) return true;
  int flag = 0;
  REAL(MPI_Testall)(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
  return flag != 0;
}

namespace {

// A send whose message is out while GPU work still reads the application's
// buffer: done when that work is.
class ReadingDone final : public Operation {
 public:
  ~ReadingDone() override {
    rt::release_marker(reading);
    rt::release_staging(buf);
  }
  bool step() override {
    auto done = rt::marker_done(reading);
    if (!done) {
      DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", done.error().what.c_str());
      error = MPI_ERR_OTHER;
      return true;
    }
    return done.value();
  }
  rt::Staging buf;
  rt::GpuMarker reading = nullptr;
};

// Posts the descriptor of `d` on the user's envelope without waiting: the
// system request in `r`, the encoded bytes in `buf` (returned at completion).
Status post_descriptor(const Descriptor& d, int dest, int tag, MPI_Comm comm, bool synchronous, MPI_Request* r,
                       rt::Staging& buf) {
  auto st = rt::acquire_staging(kDescriptorBytes);
  if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a descriptor: " + st.error().what};
  buf = st.value();
  encode(d, static_cast<unsigned char*>(buf.ptr));
  Status posted = synchronous ? DTMPI_MPI_STATUS(REAL(MPI_Issend)(buf.ptr, kDescriptorBytes, MPI_PACKED, dest, tag, comm, r))
                              : DTMPI_MPI_STATUS(REAL(MPI_Isend)(buf.ptr, kDescriptorBytes, MPI_PACKED, dest, tag, comm, r));
  if (!posted) rt::release_staging(buf);
  return posted;
}

// Completes a posted descriptor: with `request` its system request goes to
// the application (tracked: the buffer is returned, and the GPU work still
// reading the application's buffer, `reading`, waited for, when it
// completes); without, waits for both, running progress.
Status complete_descriptor(MPI_Request r, rt::Staging buf, rt::GpuMarker reading, MPI_Request* request) {
  if (request && reading) {
    int done = 0;
    if (DTMPI_MPI_WARN(REAL(MPI_Request_get_status)(r, &done, MPI_STATUS_IGNORE)) && done) {
      // the system MPI completed the descriptor at once, maybe under a handle
      // it shares among all such sends (Open MPI's ompi_request_empty, MPICH's
      // builtin request): the application gets a request of its own,
      // complete once the pack stopped reading its buffer
      auto op = std::make_unique<ReadingDone>();
      op->buf = buf;
      op->reading = reading;
      return start_with_request(std::move(op), request);
    }
  }
  if (request) {
    *request = r;
    PendingOp op;
    op.staging = buf;
    op.reading = reading;
    ledger::track(*request, std::move(op));
    return ok_status();
  }
  Status sent = ok_status();
  for (int flag = 0; !flag;) {
    sent = DTMPI_MPI_STATUS(REAL(MPI_Test)(&r, &flag, MPI_STATUS_IGNORE));
    if (!sent) break;
    if (!flag) progress();
  }
  rt::release_staging(buf);
  if (reading) {
    if (auto done = rt::wait_marker(reading); !done)
      sent = first_error(std::move(sent), packing_failed(done.error()));
    rt::release_marker(reading);
  }
  return sent;
}

// Sends the descriptor of `d` on the user's envelope: the application gets
// the system request in `request`, or (null) the call waits for it.
Status send_descriptor(const Descriptor& d, int dest, int tag, MPI_Comm comm, bool synchronous, MPI_Request* request) {
  MPI_Request r = MPI_REQUEST_NULL;
  rt::Staging buf;
  DTMPI_TRY(post_descriptor(d, dest, tag, comm, synchronous, &r, buf));
  return complete_descriptor(r, buf, nullptr, request);
}

// The pipelined sender: the descriptor first, then device-to-host copies of
// every chunk queued at once, each chunk sent as soon as its copy is done.
// Runs inside the MPI call, so an application blocked later in a call dtmpi
// does not see can never stall a pipeline its peer waits for.
Status send_pipelined(const UserBuffer& b, SendTail& tail, Descriptor& d, int dest, int tag, MPI_Comm comm,
                      bool synchronous, MPI_Request* request) {
  const int64_t chunk = std::min<int64_t>(rt::config().pipeline_chunk, INT32_MAX);
  d.wire = Wire::kPipelined;
  d.chunk_bytes = chunk;
  auto st = rt::acquire_staging(static_cast<size_t>(b.bytes));
  if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a pipelined send: " + st.error().what};
  tail.staging = st.value();
  auto* host = static_cast<char*>(tail.staging.ptr);
  const int64_t nchunks = (b.bytes + chunk - 1) / chunk;
  rt::DeviceBuffer packed;
  if (rt::on_gpu(b.info)) {
    auto dev = rt::pack_to_device_buffer(*b.plan, b.count, b.ptr, b.info);
    if (!dev) return packing_failed(dev.error());
    packed = dev.value();
    for (int64_t k = 0; k < nchunks; ++k) {
      const int64_t off = k * chunk, n = std::min(chunk, b.bytes - off);
      auto m = rt::copy_async(host + off, static_cast<char*>(packed.ptr) + off, static_cast<size_t>(n), packed.device);
      if (!m) {
        rt::release_device_buffer(packed);
        return copy_failed(m.error());
      }
      tail.markers.push_back(m.value());
    }
  } else {
    pack::pack_host(*b.plan, b.count, b.ptr, host);
  }
  Status sent = send_descriptor(d, dest, tag, comm, synchronous, request);
  if (sent) {
    tail.reqs.resize(static_cast<size_t>(nchunks), MPI_REQUEST_NULL);
    for (int64_t k = 0; k < nchunks && sent; ++k) {
      if (k < static_cast<int64_t>(tail.markers.size())) {
        while (true) {  // the system MPI moves earlier chunks meanwhile
          auto done = rt::marker_done(tail.markers[static_cast<size_t>(k)]);
          if (!done) {
            sent = copy_failed(done.error());
            break;
          }
          if (done.value()) break;
          int flag = 0;
          // a failure shows again in the chunks' completion (the tail's own test)
          DTMPI_MPI_WARN(REAL(MPI_Testall)(static_cast<int>(k), tail.reqs.data(), &flag, MPI_STATUSES_IGNORE));
        }
        if (!sent) break;
      }
      const int64_t off = k * chunk, n = std::min(chunk, b.bytes - off);
      sent = DTMPI_MPI_STATUS(REAL(MPI_Isend)(host + off, static_cast<int>(n), MPI_PACKED, d.receiver_world,
                                              data_tag(d.transfer_id), private_comm(), &tail.reqs[static_cast<size_t>(k)]));
    }
  }
  rt::release_device_buffer(packed);
  return sent;
}

// Makes the tail answer for the application's request: it takes the posted
// descriptor (its request, its buffer) and the marker of the GPU work reading
// the application's buffer. Used until the receiver has once read one of our
// IPC regions: a receiver that cannot map them answers "send the payload",
// which only this rank can do -- and an application whose request completed
// at the descriptor may by then block in a call dtmpi never sees (a barrier
// of the system MPI) while its peer waits for the payload. Waiting for the
// answer inside this rank's own request keeps both in dtmpi until it is
// given. (The host test mode, whose receivers never map, always takes it.)
Status hand_to_tail(SendTail& tail, MPI_Request descriptor_request, rt::Staging buf, rt::GpuMarker reading) {
  tail.reqs.push_back(descriptor_request);
  tail.descriptor_buf = buf;
  if (reading) tail.markers.push_back(reading);
  tail.answers_request = true;
  return ok_status();
}

}  // namespace

// Posts the receive of the receiver's Ack and the descriptor (an IPC
// transfer's announcement) without waiting; the ack receive is withdrawn if
// the descriptor cannot be posted.
Status announce(SendTail& tail, const Descriptor& d, int dest, int tag, MPI_Comm comm, bool synchronous,
                MPI_Request* r, rt::Staging& buf) {
  DTMPI_TRACE("send: announcing");
  Status posted = DTMPI_MPI_STATUS(REAL(MPI_Irecv)(&tail.ack, 1, MPI_INT32_T, d.receiver_world,
                                                   ack_tag(d.transfer_id), private_comm(), &tail.ack_req));
  DTMPI_TRACE("send: ack receive posted");
  if (posted) posted = post_descriptor(d, dest, tag, comm, synchronous, r, buf);
  DTMPI_TRACE("send: descriptor posted");
  tail.announced = posted.ok();
  if (!posted && tail.ack_req != MPI_REQUEST_NULL) {
    DTMPI_MPI_WARN(REAL(MPI_Cancel)(&tail.ack_req));
    DTMPI_MPI_WARN(REAL(MPI_Wait)(&tail.ack_req, MPI_STATUS_IGNORE));
  }
  return posted;
}

namespace {

// True when the descriptor may go out before the pack is queued (see
// send_over_ipc): a standard-mode send (a synchronous descriptor waits for its
// receiver), a layout whose pack cannot fail for want of resources (strided
// plans need no device data; an irregular plan's block list is allocated on
// first use), and a single application thread: nothing else may queue GPU work
// on the stream between the counter's reservation and its commit (a wait for
// a peer queued there could wait, through the peer's own early send, for this
// very commit).
bool may_announce_early(const UserBuffer& b, bool synchronous) {
  if (synchronous || !b.plan->is_strided()) return false;
  int level = MPI_THREAD_SINGLE;
  REAL(MPI_Query_thread)(&level);
  return level != MPI_THREAD_MULTIPLE;
}

// Large device-method messages are packed in chunks (DTMPI_IPC_CHUNK_MIN):
// above the gated size the receiver waits with stream waits, which it can
// place between the reads of the chunks. Not to a receiver known to share
// this GPU: there the chunks' packs and reads take turns on one GPU, and
// 64 MiB took 1.15-1.8x longer chunked (2 ranks on one H100, 2026-11-26),
// where a receiver on another GPU gained 5-10% (2 x H100,
// bench/results/gpu-toggles-2xh100-2026-11-26.txt).
bool chunked(int64_t bytes, int receiver_world) {
  const auto& c = rt::config();
  return c.ipc_chunk_min > 0 && bytes >= c.ipc_chunk_min && bytes > c.gated_unpack_max &&
         (rt::test_hooks().chunk_same_gpu || !shares_gpu_with(receiver_world));
}

// The device method from GPU memory: the receiver's kernel reads tail.device
// (exported in d.region) once the ready signal says the pack is done, waiting
// for it on the GPU. Where the signal is a counter and may_announce_early,
// the descriptor goes first and the pack is queued after it, so the sender's
// launch (3 us of host time) overlaps the receiver's setup; the receiver's
// kernel then polls the counter itself (a stream wait reached before the
// counter is written is re-checked only every several microseconds:
// bench/results/gpu-latency-2xh200-2026-11-23.txt). Otherwise: pack, raise,
// then the descriptor. The signal is raised whatever happens after the
// announcement, so a receiver and later transfers never wait forever (a
// strided pack can then only fail if CUDA itself does; the sender is told,
// the receiver's bytes are undefined, as with any fault of the device). The
// application's request (or the blocking call) completes once the pack has
// read its buffer: a kernel it launches on a stream of its own right after
// may overwrite it. A large message (chunked()) is packed in chunks, each
// followed by its own ready value, so the receiver reads chunk k while the
// sender still packs the rest (ReceiveOp::read_chunks).
Status send_over_ipc(const UserBuffer& b, SendTail& tail, Descriptor& d, int dest, int tag, MPI_Comm comm,
                     bool synchronous, MPI_Request* request) {
  const int device = b.info.device;
  MPI_Request r = MPI_REQUEST_NULL;
  rt::Staging buf;
  // chunked (DTMPI_IPC_CHUNK_MIN): one reserved counter value per chunk; one
  // chunk: a reserved value where the descriptor may go first, else raised
  // after the pack (an interprocess event where counters are unavailable)
  int64_t ends[kMaxChunks] = {b.bytes};
  int chunks = chunked(b.bytes, d.receiver_world) ? chunk_ends(b.bytes, ends) : 1;
  const bool early = may_announce_early(b, synchronous);
  auto first = chunks > 1 || early ? ipc_signal_reserve(device, chunks)
                                   : Result<IpcSignal>(Error{kErrUnsupported, "in order"});
  if (!first && chunks > 1) {
    chunks = 1;
    ends[0] = b.bytes;
    if (early) first = ipc_signal_reserve(device);
  }
  const bool announce_first = first && early;
  if (first) {
    tail.ready = d.ready = first.value();
    d.chunks = chunks;
  }
  Status announced = announce_first ? announce(tail, d, dest, tag, comm, synchronous, &r, buf) : ok_status();
  // a non-blocking send to another process whose last read of this rank's
  // regions was a gated unpack kernel on another GPU, of a message it will
  // gate again: the pack joins the batch the next wait queues
  // (pack_later); the request completes once the batch has read the
  // buffer. Only such readers: a receiver whose stream waits for the value
  // (another process on this GPU, a message over DTMPI_GATED_UNPACK_MAX)
  // would wait for a pack not yet queued, and with two processes on one GPU
  // that hung both in the batch's kernel launch, the GPU idle (session 8,
  // bench/results/batch-hang-1xh100-2026-11-23.txt). A message to itself is
  // never batched (its receive would have to queue the batch at once).
  if (announced && announce_first && chunks == 1 && request && rt::config().batch_packs &&
      d.receiver_world != my_world_rank() && ipc_read_gated_by(d.receiver_world) &&
      b.bytes <= rt::config().gated_unpack_max) {
    if (auto later = pack_later(b.plan, b.count, b.ptr, b.info, tail.device.ptr, first.value())) {
      DTMPI_TRACE("send: pack batched");
      return complete_descriptor(r, buf, later.value(), request);
    }
  }
  // every reserved value is committed whatever happens, so receivers and
  // later transfers never wait forever
  Status packed = ok_status();
  for (int k = 0; k < chunks; ++k) {
    const int64_t lo = k == 0 ? 0 : ends[k - 1];
    if (announced && packed)
      packed = rt::pack_to_device_async(*b.plan, b.count, b.ptr, b.info, tail.device.ptr,
                                        chunks == 1 ? type::PackedRange{} : type::PackedRange{lo, ends[k] - lo});
    if (!first) continue;
    IpcSignal value = first.value();
    value.value += static_cast<uint64_t>(k);
    if (auto raised = ipc_signal_commit(value); !raised && packed) packed = raised;
  }
  DTMPI_TRACE("send: pack queued");
  if (chunks > 1) rt::count(rt::Counter::kChunkedSends);
  DTMPI_TRY(announced);
  if (!first) {
    auto ready = packed ? ipc_signal_raise(device) : Result<IpcSignal>(packed.error());
    if (!ready) return packing_failed(ready.error());
    tail.ready = d.ready = ready.value();
  }
  if (!packed) {
    // the descriptor went out: its completion's own error is secondary to the pack's
    if (announce_first) static_cast<void>(complete_descriptor(r, buf, nullptr, nullptr));
    return packing_failed(packed.error());
  }
  auto reading = rt::mark(device);
  DTMPI_TRACE("send: pack marked");
  if (!announce_first) {
    if (!reading) return packing_failed(reading.error());
    if (announced = announce(tail, d, dest, tag, comm, synchronous, &r, buf); !announced) {
      if (auto waited = rt::wait_marker(reading.value()); !waited)
        DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", waited.error().what.c_str());
      rt::release_marker(reading.value());
      return announced;
    }
  } else if (!reading) {
    // the stream is waited for instead of the marker; the mark's error is logged
    // here because the send goes on without it
    DTMPI_LOG(kError, "packing a GPU send buffer failed: %s", reading.error().what.c_str());
    if (!rt::wait_stream(device)) {
      static_cast<void>(complete_descriptor(r, buf, nullptr, nullptr));
      return Error{MPI_ERR_OTHER, ""};
    }
  }
  if (!ipc_read_by(d.receiver_world)) return hand_to_tail(tail, r, buf, reading ? reading.value() : nullptr);
  return complete_descriptor(r, buf, reading ? reading.value() : nullptr, request);
}

}  // namespace

// A new transfer of `bytes` to world rank `dest_world` on the user's `tag`:
// its tail, and its descriptor's common fields in `d`.
std::unique_ptr<SendTail> begin_transfer(int64_t bytes, int dest_world, int tag, Descriptor& d) {
  auto tail = std::make_unique<SendTail>();
  tail->bytes = bytes;
  tail->peer_world = dest_world;
  d.total_bytes = bytes;
  d.transfer_id = tail->id = next_transfer_id();
  d.sender_world = my_world_rank();
  d.receiver_world = dest_world;
  d.user_tag = tag;
  return tail;
}


Status send_multi(const UserBuffer& b, Method m, int dest, int dest_world, int tag, MPI_Comm comm, bool synchronous,
                  MPI_Request* request) {
  rt::count(rt::Counter::kMultiSends);
  Descriptor d;
  auto tail = begin_transfer(b.bytes, dest_world, tag, d);
  Status sent = ok_status();
  if (m == Method::kPipelined) {
    sent = send_pipelined(b, *tail, d, dest, tag, comm, synchronous, request);
  } else {
    // device method: CUDA IPC from a pooled device buffer (the application's
    // buffer is free as soon as the call returns). Where IPC is impossible the
    // pipelined method takes over. The host test mode sends an IPC descriptor
    // without a region: the receiver answers "send the payload", exercising
    // the fallback a failed IPC mapping takes.
    d.wire = Wire::kIpc;
    if (rt::on_gpu(b.info) && ipc_possible(dest_world)) {
      auto dev = rt::acquire_device_buffer(b.info.device, static_cast<size_t>(b.bytes));
      if (!dev) return Error{MPI_ERR_NO_MEM, "no device buffer for a send: " + dev.error().what};
      tail->device = dev.value();
      auto region = ipc_export(tail->device.ptr, true);
      if (!region) {
        DTMPI_LOG(kInfo, "CUDA IPC export failed (%s): pipelined", region.error().what.c_str());
        rt::release_device_buffer(tail->device);
        return send_multi(b, Method::kPipelined, dest, dest_world, tag, comm, synchronous, request);
      }
      d.region = region.value();
      DTMPI_TRACE("send: region exported");
      sent = send_over_ipc(b, *tail, d, dest, tag, comm, synchronous, request);
    } else if (!rt::on_gpu(b.info) && rt::test_hooks().stage_host) {
      auto st = rt::acquire_staging(static_cast<size_t>(b.bytes));
      if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a send: " + st.error().what};
      tail->staging = st.value();
      pack::pack_host(*b.plan, b.count, b.ptr, tail->staging.ptr);
      MPI_Request r = MPI_REQUEST_NULL;
      rt::Staging buf;
      sent = announce(*tail, d, dest, tag, comm, synchronous, &r, buf);
      if (sent)
        sent = ipc_read_by(dest_world) ? complete_descriptor(r, buf, nullptr, request)
                                     : hand_to_tail(*tail, r, buf, nullptr);
    } else {
      return send_multi(b, Method::kPipelined, dest, dest_world, tag, comm, synchronous, request);
    }
  }
  if (sent && tail->answers_request) {
    if (request) return start_with_request(std::move(tail), request);
    return run(*tail, MPI_STATUS_IGNORE);
  }
  if (sent || tail->announced || !tail->reqs.empty()) start_background(std::move(tail));
  return sent;
}

}  // namespace dtmpi::transport
