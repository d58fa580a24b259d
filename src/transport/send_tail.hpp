// The sender's side of a multi-message transfer after its first call (a
// SendTail: the rest of the transfer, stepped by the engine), shared by the
// sending files of the protocol (send.cpp, send_in_place.cpp). Internal to
// src/transport.
#pragma once
#include <mpi.h>

#include <memory>
#include <vector>

#include "base/result.hpp"
#include "runtime/buffers.hpp"
#include "runtime/markers.hpp"
#include "transport/descriptor.hpp"
#include "transport/engine.hpp"
#include "transport/ipc_signal.hpp"

namespace dtmpi::transport {

namespace rt = dtmpi::runtime;

// What remains of a send after the application's request completed.
class SendTail final : public Operation {
 public:
  ~SendTail() override {
    for (auto m : markers) rt::release_marker(m);
    rt::release_staging(staging);
    rt::release_device_buffer(device);
    ipc_signal_release(ready);
    rt::release_staging(descriptor_buf);
  }
  bool step() override;

  Wire wire = Wire::kPipelined;
  int32_t id = 0;
  int peer_world = -1;
  rt::Staging staging;       // packed bytes in host memory
  rt::DeviceBuffer device;   // packed bytes on the GPU (IPC)
  IpcSignal ready;       // raised after the pack (IPC)
  std::vector<rt::GpuMarker> markers;
  std::vector<MPI_Request> reqs;  // chunk sends, payload send
  int32_t ack = 0;
  MPI_Request ack_req = MPI_REQUEST_NULL;
  bool announced = false;  // the descriptor went out: the receiver may read `device` until its Ack
  // the application's request (or blocking call) completes with this tail,
  // at the receiver's answer: see finish_send
  bool answers_request = false;
  // send_in_place: the bytes the receiver reads where they lie (not ours to
  // release), and the descriptor's buffer, kept until its request is done
  const void* in_place = nullptr;
  int in_place_device = -1;
  rt::Staging descriptor_buf;
};


// A new transfer of `bytes` to world rank `dest_world` on the user's `tag`:
// its tail, and its descriptor's common fields in `d`.
std::unique_ptr<SendTail> begin_transfer(int64_t bytes, int dest_world, int tag, Descriptor& d);
// Posts the receive of the receiver's Ack and the descriptor (an IPC
// transfer's announcement) without waiting.
Status announce(SendTail& tail, const Descriptor& d, int dest, int tag, MPI_Comm comm, bool synchronous,
                MPI_Request* r, rt::Staging& buf);

}  // namespace dtmpi::transport
