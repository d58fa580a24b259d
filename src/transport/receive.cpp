// The receiving half: a landing receive on the user's envelope, then, if what
// landed is a descriptor, the rest of the transfer.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/system_mpi.hpp"
#include "base/log.hpp"
#include "base/trace.hpp"
#include "pack/cpu_pack.hpp"
#include "runtime/config.hpp"
#include "runtime/device.hpp"
#include "runtime/stats.hpp"
#include "runtime/status.hpp"
#include "runtime/stream_pack.hpp"
#include "transport/batched_sends.hpp"
#include "transport/peers.hpp"
#include "transport/transfer.hpp"
#include "transport/unpack_bytes.hpp"
#include "type/introspect.hpp"

namespace dtmpi::transport {

namespace rt = dtmpi::runtime;

ReceiveOp::ReceiveOp(const UserBuffer& b, bool staged, MPI_Comm comm) : b_(b), staged_(staged), comm_(comm) {}

ReceiveOp::~ReceiveOp() {
  for (auto m : markers_) rt::release_marker(m);
  if (!payload_is_landing_) rt::release_staging(payload_);
  rt::release_staging(landing_);
  rt::release_device_buffer(device_);
}

Status ReceiveOp::post(int source, int tag) {
  if (staged_) {
    auto st = rt::acquire_staging(static_cast<size_t>(b_.bytes));
    if (!st) return Error{MPI_ERR_NO_MEM, "no staging buffer for a receive: " + st.error().what};
    landing_ = st.value();
    rt::count(rt::Counter::kStagedRecvs);
    return DTMPI_MPI_STATUS(
        REAL(MPI_Irecv)(landing_.ptr, static_cast<int>(b_.bytes), MPI_PACKED, source, tag, comm_, &landing_req_));
  }
  return DTMPI_MPI_STATUS(REAL(MPI_Irecv)(b_.ptr, b_.count, b_.type, source, tag, comm_, &landing_req_));
}

Status ReceiveOp::receive_blocking(int source, int tag) {
  MPI_Status st = rt::seeded(MPI_STATUS_IGNORE);
  int rc;
  if (staged_) {
    auto s = rt::acquire_staging(static_cast<size_t>(b_.bytes));
    if (!s) return Error{MPI_ERR_NO_MEM, "no staging buffer for a receive: " + s.error().what};
    landing_ = s.value();
    rt::count(rt::Counter::kStagedRecvs);
    rc = REAL(MPI_Recv)(landing_.ptr, static_cast<int>(b_.bytes), MPI_PACKED, source, tag, comm_, &st);
  } else {
    rc = REAL(MPI_Recv)(b_.ptr, b_.count, b_.type, source, tag, comm_, &st);
  }
  st.MPI_ERROR = rc;  // landed() takes the receive's error as the operation's
  landed(st);
  return ok_status();
}

void ReceiveOp::from_stash(Stashed& e) {
  source = e.source;
  tag = e.tag;
  status = rt::seeded(MPI_STATUS_IGNORE);
  status.MPI_SOURCE = source;
  status.MPI_TAG = tag;
  REAL(MPI_Status_set_cancelled)(&status, 0);
  has_status = true;
  if (e.is_descriptor) return begin_multi(e.descriptor);
  bytes = static_cast<int64_t>(e.raw.size());
  if (bytes > b_.bytes) {
    rt::set_bytes(&status, rt::truncated_count(bytes, b_.bytes));
    return fail(Error{MPI_ERR_TRUNCATE, ""});
  }
  rt::set_bytes(&status, bytes);
  deliver_packed(e.raw.data(), bytes);
  state_ = State::kDone;
}

void ReceiveOp::fail(const Error& e) {
  if (!e.what.empty()) DTMPI_LOG(kError, "%s", e.what.c_str());
  error = e.code;
  error_reported = error_reported || e.reported;
  state_ = State::kDone;
}

void ReceiveOp::cancel() {
  if (state_ == State::kLanding && landing_req_ != MPI_REQUEST_NULL) REAL(MPI_Cancel)(&landing_req_);
}

// The descriptor in the landing message, if it is one.
bool ReceiveOp::read_descriptor(int received, const MPI_Status& st, Descriptor& d) {
  if (received != kDescriptorBytes) return false;
  const int sender = world_rank_of(comm_, st.MPI_SOURCE);
  if (sender < 0) return false;
  unsigned char bytes[kDescriptorBytes];
  if (staged_) {
    std::memcpy(bytes, landing_.ptr, kDescriptorBytes);
  } else {
    // the descriptor was written through the user's type: read it back
    const int64_t size = b_.plan ? b_.plan->size : 0;
    if (b_.plan && size > 0) {
      const int64_t n = std::min<int64_t>(b_.count, (kDescriptorBytes + size - 1) / size);
      std::vector<unsigned char> tmp(static_cast<size_t>(n * size));
      pack::pack_host(*b_.plan, n, b_.ptr, tmp.data());
      std::memcpy(bytes, tmp.data(), kDescriptorBytes);
    } else {
      // (an element past 2^31 bytes cannot go through MPI_Pack's int sizes)
      auto size64 = type::size_of(b_.type);
      if (!size64 || size64.value() <= 0 || size64.value() > INT32_MAX) return false;
      const int tsize = static_cast<int>(size64.value());
      const int n = std::min(b_.count, (kDescriptorBytes + tsize - 1) / tsize);
      std::vector<unsigned char> tmp(static_cast<size_t>(n) * static_cast<size_t>(tsize));
      int pos = 0;
      if (!DTMPI_MPI_WARN(REAL(MPI_Pack)(b_.ptr, n, b_.type, tmp.data(), static_cast<int>(tmp.size()), &pos, comm_)))
        return false;
      std::memcpy(bytes, tmp.data(), kDescriptorBytes);
    }
  }
  auto decoded = decode(bytes, sender, my_world_rank(), st.MPI_TAG);
  if (!decoded) return false;
  d = *decoded;
  return true;
}

// Unpacks `bytes` packed bytes held in host memory into the user's buffer,
// also those of an element the message ends inside (MPI fills the received
// prefix of the typemap).
void ReceiveOp::deliver_packed(const void* packed, int64_t nbytes) {
  if (nbytes <= 0 || nbytes > b_.bytes) return;  // nothing, or truncated (reported elsewhere)
  if (b_.plan) {
    rt::Staging view;
    view.ptr = const_cast<void*>(packed);
    view.pinned = (packed == landing_.ptr && landing_.pinned) || (packed == payload_.ptr && payload_.pinned);
    auto ok = stage_in_bytes(*b_.plan, nbytes, view, b_.ptr, b_.info, true);
    if (!ok) {
      DTMPI_LOG(kError, "unpacking a received message failed: %s", ok.error().what.c_str());
      error = MPI_ERR_OTHER;
    }
    return;
  }
  if (Status unpacked = unpack_with_type(packed, nbytes); !unpacked) {
    DTMPI_LOG(kError, "%s", unpacked.error().what.c_str());
    error = unpacked.error().code;
  }
}

// deliver_packed for a type dtmpi has no plan for: the system MPI unpacks the
// whole elements; an element the message ends inside is packed as it is,
// overwritten with the bytes that arrived and unpacked again.
Status ReceiveOp::unpack_with_type(const void* packed, int64_t nbytes) {
  const int64_t size = b_.bytes / std::max(b_.count, 1);
  if (size <= 0) return ok_status();
  const int whole = static_cast<int>(nbytes / size), rem = static_cast<int>(nbytes % size);
  int pos = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Unpack)(packed, static_cast<int>(nbytes), &pos, b_.ptr, whole, b_.type, comm_));
  if (rem == 0) return ok_status();
  MPI_Aint lb = 0, extent = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Type_get_extent)(b_.type, &lb, &extent));
  void* last = static_cast<char*>(b_.ptr) + whole * extent;
  std::vector<unsigned char> elem(static_cast<size_t>(size));
  pos = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Pack)(last, 1, b_.type, elem.data(), static_cast<int>(size), &pos, comm_));
  std::memcpy(elem.data(), static_cast<const char*>(packed) + int64_t{whole} * size, static_cast<size_t>(rem));
  pos = 0;
  DTMPI_MPI_CHECK(REAL(MPI_Unpack)(elem.data(), static_cast<int>(size), &pos, last, 1, b_.type, comm_));
  return ok_status();
}

void ReceiveOp::landed(MPI_Status& st) {
  DTMPI_TRACE("recv: landed");
  source = st.MPI_SOURCE;
  tag = st.MPI_TAG;
  status = st;  // as the system MPI reports it (a truncated one too)
  has_status = true;
  int c = 0;
  REAL(MPI_Test_cancelled)(&st, &c);
  if (c) {
    cancelled = true;
    state_ = State::kDone;
    return;
  }
  // the landing receive's own error, in its status: the system MPI's receive
  // on comm_ reported it
  if (Status received = mpi_status(st.MPI_ERROR, "", true); !received) return fail(received.error());
  MPI_Count received = 0;
  REAL(MPI_Get_elements_x)(&st, MPI_BYTE, &received);
  bytes = received;
  Descriptor d;
  if (received == kDescriptorBytes && read_descriptor(kDescriptorBytes, st, d)) return begin_multi(d);
  if (staged_) deliver_packed(landing_.ptr, received);
  state_ = State::kDone;
}

void ReceiveOp::send_ack(Ack a) {
  ack_ = static_cast<int32_t>(a);
  REAL(MPI_Isend)(&ack_, 1, MPI_INT32_T, d_.sender_world, ack_tag(d_.transfer_id), private_comm(), &ack_req_);
}

void ReceiveOp::begin_multi(const Descriptor& d) {
  d_ = d;
  bytes = d.total_bytes;
  rt::count(rt::Counter::kMultiRecvs);
  if (d.total_bytes > b_.bytes) {  // longer than the receive: MPI_ERR_TRUNCATE, drain the sender
    bytes = rt::truncated_count(d.total_bytes, b_.bytes);
    rt::set_bytes(&status, bytes);
    pending_ = Error{MPI_ERR_TRUNCATE, ""};
    if (d.wire == Wire::kPipelined) {
      auto st = rt::acquire_staging(static_cast<size_t>(std::min(d.chunk_bytes, d.total_bytes)));
      if (!st) return fail(Error{MPI_ERR_NO_MEM, ""});
      payload_ = st.value();
      chunks_.assign(static_cast<size_t>((d.total_bytes + d.chunk_bytes - 1) / d.chunk_bytes), MPI_REQUEST_NULL);
      chunks_copied_ = 0;
      state_ = State::kDrain;
      return;
    }
    send_ack(Ack::kDiscard);
    state_ = State::kAck;
    return;
  }
  rt::set_bytes(&status, d.total_bytes);  // the transfer's, not the descriptor's
  // where the packed stream lands in host memory: the landing buffer when it
  // is one of ours (it holds the receive bound), else a new one
  if (d.wire != Wire::kIpc) {
    if (landing_.ptr && static_cast<int64_t>(landing_.capacity) >= d.total_bytes) {
      payload_ = landing_;
      payload_is_landing_ = true;
    } else {
      auto st = rt::acquire_staging(static_cast<size_t>(d.total_bytes));
      if (!st) return fail(Error{MPI_ERR_NO_MEM, ""});
      payload_ = st.value();
    }
  }
  if (d.wire == Wire::kPipelined) {
    const int64_t n = (d.total_bytes + d.chunk_bytes - 1) / d.chunk_bytes;
    chunks_.assign(static_cast<size_t>(n), MPI_REQUEST_NULL);
    auto* host = static_cast<char*>(payload_.ptr);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t off = k * d.chunk_bytes, len = std::min(d.chunk_bytes, d.total_bytes - off);
      if (Status posted = DTMPI_MPI_STATUS(REAL(MPI_Irecv)(host + off, static_cast<int>(len), MPI_PACKED, d.sender_world,
                                                           data_tag(d.transfer_id), private_comm(),
                                                           &chunks_[static_cast<size_t>(k)]));
          !posted)
        return fail(posted.error());
    }
    if (rt::on_gpu(b_.info)) {
      auto dev = rt::acquire_device_buffer(b_.info.device, static_cast<size_t>(d.total_bytes));
      if (!dev) return fail(Error{MPI_ERR_NO_MEM, ""});
      device_ = dev.value();
    }
    state_ = State::kChunks;
    return;
  }
  if (d.wire == Wire::kIpc && read_over_ipc()) {
    if (!markers_.empty()) {  // queued on the GPU: acknowledged once it is done
      state_ = State::kIpcUnpack;
      return;
    }
    send_ack(read_ack());
    state_ = State::kAck;
    return;
  }
  // the region cannot be mapped here: ask for the bytes
  if (!payload_.ptr) {
    auto st = rt::acquire_staging(static_cast<size_t>(d.total_bytes));
    if (!st) return fail(Error{MPI_ERR_NO_MEM, ""});
    payload_ = st.value();
  }
  if (Status posted = DTMPI_MPI_STATUS(REAL(MPI_Irecv)(payload_.ptr, static_cast<int>(d.total_bytes), MPI_PACKED,
                                                       d.sender_world, data_tag(d.transfer_id), private_comm(),
                                                       &payload_req_));
      !posted)
    return fail(posted.error());
  send_ack(Ack::kSendPayload);
  state_ = State::kPayload;
}

// Unpacks straight from the sender's device buffer, mapped over CUDA IPC.
bool ReceiveOp::read_over_ipc() {
  if (!rt::gpu_enabled() || !b_.plan || d_.region.buffer_id == 0 || rt::test_hooks().refuse_ipc) return false;
  const int device = rt::on_gpu(b_.info) ? b_.info.device : rt::current_device();
  const bool local = d_.sender_world == my_world_rank();  // a message to itself
  // messages to itself are never batched (send_over_ipc), but this process's
  // batched packs for others are queued first all the same, so no gated
  // kernel of this GPU is ever queued ahead of any pack of this process (it
  // could hold every SM slot the pack needs); an atomic load when none is open
  if (local && !flush_packs()) DTMPI_LOG(kError, "queuing batched packs failed");
  auto peer = ipc_open(d_.sender_world, d_.region, device, local);
  DTMPI_TRACE("recv: region opened");
  if (!peer) {
    static bool once = [&] {
      DTMPI_LOG(kWarn, "CUDA IPC with rank %d impossible (%s): device transfers go through host memory",
                d_.sender_world, peer.error().what.c_str());
      return true;
    }();
    (void)once;
    return false;
  }
  // a sender on another GPU may announce before its pack is queued: the
  // unpack kernel of a receive up to DTMPI_GATED_UNPACK_MAX bytes polls its
  // ready counter (pack::Gate), where a stream wait would be re-checked too
  // rarely; larger ones wait with a stream wait (its re-check interval is lost
  // in their transfer time) and, when contiguous, keep the copy engine. A
  // message to itself on one GPU is gated too: its pack, queued earlier on
  // this process's transfer stream, finds SMs free beside the gated kernel
  // (capped per SM, pack::Gate). Another process sharing this GPU is never spun
  // against (without MPS its kernels could not run meanwhile).
  //
  // A message packed in chunks (DTMPI_IPC_CHUNK_MIN) is ready at its last
  // chunk's value; unless gated, each chunk is read as soon as its own value
  // is written (read_chunks).
  rt::KernelGate gate;
  IpcSignal all_ready = d_.ready;
  all_ready.value = d_.ready.value + static_cast<uint64_t>(d_.chunks - 1);
  const bool other_gpu = d_.ready.gpu != 0 && d_.ready.gpu != gpu_identity(device);
  if (d_.ready.kind == IpcSignal::Kind::kCounter && rt::on_gpu(b_.info) && local != other_gpu &&
      d_.total_bytes <= rt::config().gated_unpack_max) {
    if (auto word = ipc_signal_word(d_.sender_world, d_.ready, device, local))
      gate = {word.value(), all_ready.value};
  }
  // (before the chunked read returns: its ack tells a sender on this GPU so,
  // which then stops chunking to this rank -- send.cpp, chunked)
  same_gpu_peer_ = !local && !other_gpu && d_.ready.gpu != 0;
  if (!gate.word && d_.chunks > 1 && rt::on_gpu(b_.info) && read_chunks(peer.value(), local)) return true;
  if (!gate.word && d_.ready.kind != IpcSignal::Kind::kNone) {
    auto w = ipc_signal_wait(d_.sender_world, all_ready, device, local);
    if (!w) {
      DTMPI_LOG(kWarn, "waiting for rank %d's ready signal failed (%s): payload through host memory",
                d_.sender_world, w.error().what.c_str());
      return false;
    }
  }
  gated_from_other_gpu_ = gate.word && other_gpu;
  DTMPI_TRACE(gate.word ? "recv: gated" : "recv: ready waited");
  rt::PointerInfo pi;
  pi.kind = rt::MemKind::kDevice;
  pi.device = device;
  rt::count(rt::Counter::kIpcReads);
  if (rt::on_gpu(b_.info)) {
    // queued, not waited for: the next messages' work queues behind it while
    // step() watches its marker (the sender's buffer is released at the ack);
    // the whole packed stream, also an element it ends inside
    DTMPI_TRACE("recv: unpack launching");
    auto m = rt::unpack_async(*b_.plan, elements_touched(), peer.value(), b_.ptr, b_.info, gate,
                              type::PackedRange{0, d_.total_bytes});
    if (!m) {
      DTMPI_LOG(kError, "unpacking over CUDA IPC failed: %s", m.error().what.c_str());
      error = MPI_ERR_OTHER;
    } else {
      markers_.push_back(m.value());
    }
    DTMPI_TRACE("recv: unpack queued");
    return true;
  }
  auto ok = gpu_unpack_bytes(*b_.plan, d_.total_bytes, peer.value(), pi, b_.ptr, b_.info,
                             rt::Lane::kReceive);  // after the wait
  if (!ok) {
    DTMPI_LOG(kError, "unpacking over CUDA IPC failed: %s", ok.error().what.c_str());
    error = MPI_ERR_OTHER;
  }
  return true;
}

// A message packed in chunks: a wait for each chunk's ready value, then the
// unpack of just that chunk, all queued on the receive stream (the marker
// after the last is the one step() watches). False (nothing queued) where the
// chunks cannot be told apart here; the caller then waits for all of them.
bool ReceiveOp::read_chunks(const void* packed, bool local) {
  int64_t ends[kMaxChunks];
  if (d_.ready.kind != IpcSignal::Kind::kCounter || chunk_ends(d_.total_bytes, ends) != d_.chunks) return false;
  const int64_t elements = elements_touched();
  for (int k = 0; k < d_.chunks; ++k) {
    IpcSignal value = d_.ready;
    value.value = d_.ready.value + static_cast<uint64_t>(k);
    auto w = ipc_signal_wait(d_.sender_world, value, b_.info.device, local);
    const int64_t lo = k == 0 ? 0 : ends[k - 1];
    auto m = w ? rt::unpack_async(*b_.plan, elements, packed, b_.ptr, b_.info, {}, type::PackedRange{lo, ends[k] - lo})
               : Result<rt::GpuMarker>(w.error());
    if (!m) {
      // chunks already queued read nothing after this point: the marker of
      // the last one queued is still watched, the message is failed
      DTMPI_LOG(kError, "reading chunk %d of a GPU message over CUDA IPC failed: %s", k, m.error().what.c_str());
      if (k == 0) return false;
      error = MPI_ERR_OTHER;
      return true;
    }
    markers_.push_back(m.value());
  }
  rt::count(rt::Counter::kIpcReads);
  DTMPI_TRACE("recv: chunked unpack queued");
  return true;
}

// Chunks arrive in order; each one is copied to the device as it lands, and
// the unpack runs once the last copy is queued.
bool ReceiveOp::step_chunks() {
  const bool gpu = device_.ptr != nullptr;
  while (chunks_copied_ < chunks_.size()) {
    int flag = 0;
    REAL(MPI_Test)(&chunks_[chunks_copied_], &flag, MPI_STATUS_IGNORE);
    if (!flag) return false;
    if (gpu) {
      const int64_t off = static_cast<int64_t>(chunks_copied_) * d_.chunk_bytes;
      const int64_t len = std::min(d_.chunk_bytes, d_.total_bytes - off);
      auto m = rt::copy_async(static_cast<char*>(device_.ptr) + off, static_cast<char*>(payload_.ptr) + off,
                              static_cast<size_t>(len), device_.device);
      if (!m) {
        DTMPI_LOG(kError, "host-to-device copy failed: %s", m.error().what.c_str());
        error = MPI_ERR_OTHER;
      } else {
        markers_.push_back(m.value());
      }
    }
    ++chunks_copied_;
  }
  if (!gpu) {
    deliver_packed(payload_.ptr, d_.total_bytes);
    return true;
  }
  rt::PointerInfo di;
  di.kind = rt::MemKind::kDevice;
  di.device = device_.device;
  // on the transfer stream: after the copies
  auto ok = gpu_unpack_bytes(*b_.plan, d_.total_bytes, device_.ptr, di, b_.ptr, b_.info, rt::Lane::kTransfer);
  if (!ok) {
    DTMPI_LOG(kError, "unpacking a pipelined message failed: %s", ok.error().what.c_str());
    error = MPI_ERR_OTHER;
  }
  return true;
}

bool ReceiveOp::step() {
  int flag = 0;
  switch (state_) {
    case State::kLanding: {
      MPI_Status st = rt::seeded(MPI_STATUS_IGNORE);
      // a test that fails without completing the receive: the system MPI
      // passed its error to comm_'s handler
      const int rc = REAL(MPI_Test)(&landing_req_, &flag, &st);
      if (Status tested = mpi_status(rc, "", true); !tested && !flag) {
        fail(tested.error());
        return true;
      }
      if (!flag) return false;
      st.MPI_ERROR = rc;  // a failed receive (truncated) still reports its source, tag and count
      landed(st);
      return step();
    }
    case State::kChunks:
      if (!step_chunks()) return false;
      state_ = State::kDone;
      return true;
    case State::kDrain:
      while (chunks_copied_ < chunks_.size()) {
        MPI_Request& r = chunks_[chunks_copied_];
        if (r == MPI_REQUEST_NULL) {
          const int64_t off = static_cast<int64_t>(chunks_copied_) * d_.chunk_bytes;
          REAL(MPI_Irecv)(payload_.ptr, static_cast<int>(std::min(d_.chunk_bytes, d_.total_bytes - off)), MPI_PACKED,
                     d_.sender_world, data_tag(d_.transfer_id), private_comm(), &r);
        }
        REAL(MPI_Test)(&r, &flag, MPI_STATUS_IGNORE);
        if (!flag) return false;
        ++chunks_copied_;
      }
      if (!pending_) fail(pending_.error());
      state_ = State::kDone;
      return true;
    case State::kPayload:
      REAL(MPI_Test)(&payload_req_, &flag, MPI_STATUS_IGNORE);
      if (!flag) return false;
      deliver_packed(payload_.ptr, d_.total_bytes);
      state_ = State::kAck;
      return step();
    case State::kIpcUnpack: {
      auto done = rt::marker_done(markers_.back());
      if (done && !done.value()) return false;
      DTMPI_TRACE("recv: unpack done");
      if (!done) pending_ = Error{MPI_ERR_OTHER, "unpacking over CUDA IPC failed: " + done.error().what};
      send_ack(read_ack());
      state_ = State::kAck;
      return step();
    }
    case State::kAck:
      REAL(MPI_Test)(&ack_req_, &flag, MPI_STATUS_IGNORE);
      if (!flag) return false;
      DTMPI_TRACE("recv: ack sent");
      if (!pending_) fail(pending_.error());  // an error kept until the ack went out
      state_ = State::kDone;
      return true;
    case State::kDone:
      return true;
  }
  return true;
}

}  // namespace dtmpi::transport
