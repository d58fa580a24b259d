// Point-to-point transfers of buffers the system MPI cannot take as they are
// (GPU memory; derived types in the host test mode). Four methods:
//
//   oneshot    one message; a kernel packs into mapped pinned host memory
//   staged     one message; pack on the device, one DMA copy to pinned memory
//   pipelined  descriptor + chunks: device-to-host copies of chunk k+1
//              overlap the network transfer of chunk k, host-to-device copies
//              on the receiver overlap the chunks still arriving
//   device     GPU to GPU: over CUDA IPC between ranks of one node (the
//              receiver's kernel reads the sender's packed buffer), or handed
//              to a CUDA-aware system MPI
//
// Senders never wait for a receiver's dtmpi progress: a send is complete for
// the application once its data sits in a dtmpi buffer (the descriptor's own
// system request is the application's request); what remains runs in the
// background. See docs/point-to-point.md.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/buffers.hpp"
#include "runtime/markers.hpp"
#include "runtime/pointer_kind.hpp"
#include "transport/descriptor.hpp"
#include "transport/engine.hpp"
#include "transport/stash.hpp"
#include "type/registry.hpp"

namespace dtmpi::transport {

enum class Method : uint8_t { kOneShot, kStaged, kPipelined, kDevice };
// Single-message transfers up to this size go one-shot when nothing else
// decides (forced multi-message methods below kMultiMin, buffered sends, the
// receiver's unpack of a single message).
inline constexpr int64_t kOneShotLimit = 256 * 1024;
// ... up to this many packed bytes per buffer: beyond it the system MPI's
// streaming convertor costs no second copy of the data in memory.
inline constexpr int64_t kHostPackMaxBytes = int64_t{64} << 20;
const char* method_name(Method m);
inline bool is_multi(Method m) { return m == Method::kPipelined || m == Method::kDevice; }

// A user buffer as the transport sees it.
struct UserBuffer {
  void* ptr = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  type::PlanPtr plan;          // may be null for host buffers (then the system MPI packs)
  runtime::PointerInfo info;   // where the first byte the type touches lives
  int64_t bytes = 0;           // count x type size
  // GPU memory dtmpi cannot serve (a type it cannot plan, more than 2 GiB of
  // packed bytes) and the system MPI cannot take: the MPI error class the
  // call must return instead of handing the system MPI a device pointer
  int refused = 0;
};

// The method for sending `b` to world rank `peer_world` (-1: unknown): forced
// by DTMPI_METHOD, else the performance model's choice (transport/predict.hpp)
// -- except for a peer that shares this rank's GPU (see method.cpp).
Method choose_method(const UserBuffer& b, int peer_world);
// Up to this many bytes, a copy-engine layout goes to a peer on this rank's
// own GPU by the one-message path, not the device method.
inline constexpr int64_t kSharedGpuOneMessageMax = 256 * 1024;
// The typical contiguous block of a layout (what pack times depend on).
int64_t typical_block(const type::PackPlan& plan);
// The distance between consecutive blocks of a strided layout (0: irregular or one block).
int64_t typical_pitch(const type::PackPlan& plan);

// Sends `b` by a multi-message method. With `request`, the descriptor's
// system request is returned there (complete: the application may reuse its
// buffer); without, the call blocks until then.
Status send_multi(const UserBuffer& b, Method m, int dest, int dest_world, int tag, MPI_Comm comm,
                  bool synchronous, MPI_Request* request);

// For callers inside a blocking collective, where every rank progresses until
// all of the call is done: sends `bytes` bytes of GPU memory at `ptr` over CUDA
// IPC without copying them (the receiver reads them where they lie, after the
// GPU work queued before this call). `ptr` must lie in a buffer dtmpi owns and
// never frees while peers may map it (the device pools): receivers cache their
// mappings, and freeing memory another process maps is undefined in CUDA; `request` completes once the receiver has
// read them, so the bytes must stay unchanged until then. An ordinary send
// completes without the receiver's help (a receiver blocked in a call dtmpi
// does not see must not stall it), which is why this is not one.
// false: not possible here (no IPC with that peer, below
// kInPlaceMin, a method forced, memory CUDA cannot share): the caller sends
// the usual way. From kInPlaceMin bytes, not kMultiMin: the receiver of a
// collective's piece knows its size too and looks for a descriptor from there
// (interpose::irecv with kInPlaceMin), which saves small pieces the synchronous
// one-message path (a launch and a wait on each side).
Result<bool> send_in_place(const void* pooled, int64_t offset, int64_t bytes, const runtime::PointerInfo& info,
                           int dest, int tag, MPI_Comm comm, MPI_Request* request);

// A receive that may meet a descriptor: the landing message goes into a
// staging buffer (`staged`) or straight into the user's buffer with the
// user's type (host memory), then a descriptor, if it is one, drives the rest.
class ReceiveOp final : public Operation {
 public:
  ReceiveOp(const UserBuffer& b, bool staged, MPI_Comm comm);
  ~ReceiveOp() override;
  // Posts the landing receive (non-blocking form).
  Status post(int source, int tag);
  // Receives the landing message (blocking form); run() finishes the rest.
  Status receive_blocking(int source, int tag);
  // Starts from a message a probe already took (transport/stash.hpp).
  void from_stash(Stashed& e);
  bool step() override;
  void cancel() override;

 private:
  enum class State { kLanding, kChunks, kIpcUnpack, kAck, kPayload, kDrain, kDone };
  void landed(MPI_Status& st);
  void begin_multi(const Descriptor& d);
  bool read_descriptor(int bytes_received, const MPI_Status& st, Descriptor& d);
  void deliver_packed(const void* packed_host, int64_t bytes);
  Status unpack_with_type(const void* packed_host, int64_t bytes);
  // The elements a descriptor's transfer touches (the last one maybe in part).
  int64_t elements_touched() const {
    return b_.plan->size > 0 ? (d_.total_bytes + b_.plan->size - 1) / b_.plan->size : 0;
  }
  // Ends the operation with `e` (its code is what the application's request
  // or blocking call returns; its `what`, if any, is logged here: the code
  // travels on as a bare code through the generalized request).
  void fail(const Error& e);
  bool step_chunks();
  bool read_over_ipc();
  bool read_chunks(const void* packed, bool local);
  void send_ack(Ack a);

  UserBuffer b_;
  bool staged_;
  MPI_Comm comm_;
  State state_ = State::kLanding;
  runtime::Staging landing_;
  MPI_Request landing_req_ = MPI_REQUEST_NULL;
  Descriptor d_;
  runtime::Staging payload_;
  bool payload_is_landing_ = false;
  std::vector<MPI_Request> chunks_;
  size_t chunks_copied_ = 0;
  runtime::DeviceBuffer device_;
  std::vector<runtime::GpuMarker> markers_;
  bool gated_from_other_gpu_ = false;  // read_over_ipc: answered with Ack::kReadGated
  bool same_gpu_peer_ = false;         // read_over_ipc: answered with Ack::kReadSameGpu
  Ack read_ack() const {
    return gated_from_other_gpu_ ? Ack::kReadGated : same_gpu_peer_ ? Ack::kReadSameGpu : Ack::kRead;
  }
  int32_t ack_ = 0;
  MPI_Request ack_req_ = MPI_REQUEST_NULL;
  MPI_Request payload_req_ = MPI_REQUEST_NULL;
  Status pending_ = ok_status();  // an error kept until the sender is answered
};

}  // namespace dtmpi::transport
