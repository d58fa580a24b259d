// "Packed bytes ready" signals between processes (transport/ipc_signal.hpp),
// CUDA builds: a counter in device memory moved by stream memory operations,
// or interprocess events where those are unavailable.
#include "transport/ipc_signal.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/cuda_check.hpp"
#include "base/log.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/device.hpp"
#include "transport/batched_sends.hpp"
#include "transport/ipc.hpp"

namespace dtmpi::transport {

using runtime::DeviceScope;
using runtime::DriverCalls;
using runtime::driver;
using runtime::kMaxDevices;
using runtime::Lane;
using runtime::stream_for;

namespace {

// One counter per device. Its own small allocation, so the IPC handle maps
// exactly it; values grow by one per raise and their writes are queued in
// that order (a write of n waits for the write of n - 1 to be queued).
struct Counter {
  std::mutex mu;
  bool tried = false, usable = false;
  void* word = nullptr;
  uint64_t reserved = 0, committed = 0;  // values handed out; values whose write is queued
  IpcRegion region;
};

struct Events {
  std::mutex mu;
  std::vector<std::pair<int, cudaEvent_t>> free;        // (device, event) ready for reuse
  std::map<cudaEvent_t, cudaIpcEventHandle_t> handles;  // our events' handles (fixed per event)
  std::map<std::tuple<int, int, std::string>, cudaEvent_t> opened;  // (peer, device, handle)
};

struct Signals {
  Counter counters[kMaxDevices];
  Events events;
};

Signals& signals() {
  static auto* s = new Signals;  // never destroyed: CUDA may be torn down before static destructors
  return *s;
}

// Creates the counter of `device` (lock held): stream memory operations on
// 64-bit words supported, the word allocated, zeroed and exported.
bool create_counter(Counter& c, int device, cudaStream_t s) {
  const DriverCalls& d = driver();
  if (!d.write_value64 || !d.wait_value64 || !d.device_get || !d.device_get_attribute) return false;
  CUdevice dev = 0;
  int supported = 0;
  if (!DTMPI_CU_PROBE(d.device_get(&dev, device)) ||
      !DTMPI_CU_PROBE(d.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev)) ||
      !supported)
    return false;
  // zeroed before any peer can see it: a waiter must never read a stale value
  if (!DTMPI_CUDA_PROBE(cudaMalloc(&c.word, 256)) || !DTMPI_CUDA_PROBE(cudaMemsetAsync(c.word, 0, 256, s)) ||
      !DTMPI_CUDA_PROBE(cudaStreamSynchronize(s))) {
    if (c.word) cudaFree(c.word);
    c.word = nullptr;
    return false;
  }
  auto r = ipc_export(c.word);
  if (!r) {
    DTMPI_LOG(kInfo, "the ready counter cannot be shared (%s): interprocess events instead", r.error().what.c_str());
    cudaFree(c.word);
    c.word = nullptr;
    return false;
  }
  c.region = r.value();
  return true;
}

Result<IpcSignal> raise_event(int device, cudaStream_t s) {
  auto& c = signals().events;
  cudaEvent_t ev = nullptr;
  {
    std::lock_guard lock(c.mu);
    for (size_t i = 0; i < c.free.size(); ++i)
      if (c.free[i].first == device) {
        ev = c.free[i].second;
        c.free.erase(c.free.begin() + static_cast<long>(i));
        break;
      }
  }
  cudaIpcEventHandle_t h;
  if (!ev) {
    DTMPI_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess));
    DTMPI_CUDA_CHECK(cudaIpcGetEventHandle(&h, ev));  // the same handle for the event's lifetime
    std::lock_guard lock(c.mu);
    c.handles[ev] = h;
  } else {
    std::lock_guard lock(c.mu);
    h = c.handles[ev];
  }
  IpcSignal sig;
  sig.kind = IpcSignal::Kind::kEvent;
  sig.event = ev;
  sig.device = device;
  static_assert(sizeof(h) == sizeof(sig.handle));
  std::memcpy(sig.handle, &h, sizeof(h));
  DTMPI_CUDA_CHECK(cudaEventRecord(ev, s));
  return sig;
}

Status wait_event(int peer, const IpcSignal& sig, int device, bool local, cudaStream_t s) {
  auto& c = signals().events;
  if (local) {  // one of this process's own events: found by its handle
    cudaEvent_t own = nullptr;
    {
      std::lock_guard lock(c.mu);
      for (const auto& [ev, h] : c.handles)
        if (std::memcmp(&h, sig.handle, sizeof(h)) == 0) own = ev;
    }
    if (!own) return Error{kErrUnsupported, "an event this process never recorded"};
    DTMPI_CUDA_CHECK(cudaStreamWaitEvent(s, own, 0));
    return ok_status();
  }
  const auto key = std::make_tuple(peer, device, std::string(reinterpret_cast<const char*>(sig.handle), sizeof(sig.handle)));
  cudaEvent_t ev = nullptr;
  {
    std::lock_guard lock(c.mu);
    auto it = c.opened.find(key);
    if (it != c.opened.end()) ev = it->second;
  }
  if (!ev) {
    cudaIpcEventHandle_t h;
    std::memcpy(&h, sig.handle, sizeof(h));
    DTMPI_CUDA_CHECK(cudaIpcOpenEventHandle(&ev, h));
    std::lock_guard lock(c.mu);
    c.opened[key] = ev;
  }
  DTMPI_CUDA_CHECK(cudaStreamWaitEvent(s, ev, 0));
  return ok_status();
}

// The IPC region of the counter a signal refers to.
IpcRegion counter_region(const IpcSignal& sig) {
  IpcRegion r;
  std::memcpy(r.handle, sig.handle, sizeof(r.handle));
  r.buffer_id = sig.buffer_id;
  return r;
}

// Frees the ready counters, at MPI_Finalize (release_gpu_resources).
void release_ipc_signals() {
  for (auto& c : signals().counters) {
    std::lock_guard lock(c.mu);
    if (c.word) cudaFree(c.word);
    c.word = nullptr;
    c.tried = c.usable = false;
    c.reserved = c.committed = 0;
  }
}

}  // namespace

uint64_t gpu_identity(int device) {
  // asked on every IPC receive: computed once per device, then a load
  static std::atomic<uint64_t> known[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return 0;
  if (const uint64_t h = known[device].load(std::memory_order_acquire)) return h;
  cudaDeviceProp p{};
  if (!DTMPI_CUDA_PROBE(cudaGetDeviceProperties(&p, device))) {
    return 0;
  }
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the UUID
  for (unsigned char c : p.uuid.bytes) h = (h ^ c) * 1099511628211ULL;
  h |= 1;  // never 0 ("unknown")
  known[device].store(h, std::memory_order_release);
  return h;
}

Result<IpcSignal> ipc_signal_reserve(int device, int n) {
  if (device < 0 || device >= kMaxDevices) return Error{kErrUnsupported, "device out of range"};
  if (n < 1) return Error{kErrUnsupported, "reserving no ready value"};
  Counter& c = signals().counters[device];
  std::lock_guard lock(c.mu);
  if (!c.tried) {
    DeviceScope scope(device);
    auto s = stream_for(device);
    if (!s) return s.error();
    c.tried = true;
    static std::once_flag registered;  // freed at MPI_Finalize, after the batched packs that commit values
    std::call_once(registered, [] { runtime::at_gpu_release(release_ipc_signals); });
    c.usable = create_counter(c, device, s.value());
  }
  if (!c.usable) return Error{kErrUnsupported, "no ready counter on this device"};
  IpcSignal sig;
  sig.kind = IpcSignal::Kind::kCounter;
  std::memcpy(sig.handle, c.region.handle, sizeof(sig.handle));
  sig.buffer_id = c.region.buffer_id;
  sig.value = c.reserved + 1;
  c.reserved += static_cast<uint64_t>(n);
  sig.gpu = gpu_identity(device);
  sig.device = device;
  return sig;
}

Status commit_values(int device, uint64_t first, uint64_t last, pack::GpuStream on) {
  Counter& c = signals().counters[device];
  DeviceScope scope(device);
  auto s = on ? Result<cudaStream_t>(on) : stream_for(device);
  for (;;) {
    {
      std::lock_guard lock(c.mu);
      if (c.committed + 1 == first) {
        c.committed = last;  // taken even on failure: later commits must not wait forever
        if (!s) return s.error();
        // the default flags fence the write after the work queued before it;
        // one write of `last` satisfies every waiter for first..last
        Status written = DTMPI_CU_STATUS(driver().write_value64(reinterpret_cast<CUstream>(s.value()),
                                                                reinterpret_cast<CUdeviceptr>(c.word), last,
                                                                CU_STREAM_WRITE_VALUE_DEFAULT));
        if (!written) c.usable = false;
        return written;
      }
    }
    std::this_thread::yield();  // another thread's earlier reservation is not committed yet
  }
}

Status ipc_signal_commit(const IpcSignal& sig) {
  if (sig.kind != IpcSignal::Kind::kCounter) return ok_status();
  // batched packs hold earlier reserved values: they are queued (and their
  // values committed) first, or this commit would wait for them forever; a
  // failed batch has committed its values too, so this value still is
  auto flushed = flush_packs(sig.device);
  auto committed = commit_values(sig.device, sig.value, sig.value);
  return flushed ? committed : flushed;
}

Result<IpcSignal> ipc_signal_raise(int device) {
  auto sig = ipc_signal_reserve(device);
  if (sig) {
    auto ok = ipc_signal_commit(sig.value());
    if (ok) return sig;
    DTMPI_LOG(kInfo, "stream memory operations failed on device %d (%s): interprocess events instead", device,
              ok.error().what.c_str());
  }
  DeviceScope scope(device);
  auto s = stream_for(device);
  if (!s) return s.error();
  return raise_event(device, s.value());
}

void ipc_signal_release(IpcSignal& sig) {
  if (sig.kind != IpcSignal::Kind::kEvent || !sig.event) return;
  auto& c = signals().events;
  std::lock_guard lock(c.mu);
  c.free.emplace_back(sig.device, static_cast<cudaEvent_t>(sig.event));
  sig.event = nullptr;
}

Status ipc_signal_wait(int peer, const IpcSignal& sig, int device, bool local) {
  DeviceScope scope(device);
  auto s = stream_for(device, Lane::kReceive);
  if (!s) return s.error();
  if (sig.kind == IpcSignal::Kind::kEvent) return wait_event(peer, sig, device, local, s.value());
  if (sig.kind != IpcSignal::Kind::kCounter) return Error{kErrUnsupported, "no ready signal"};
  if (!driver().wait_value64) return Error{kErrUnsupported, "no stream memory operations in this driver"};
  auto word = ipc_open(peer, counter_region(sig), device, local);
  if (!word) return word.error();
  DTMPI_CU_CHECK(driver().wait_value64(reinterpret_cast<CUstream>(s.value()),
                                       reinterpret_cast<CUdeviceptr>(word.value()), sig.value,
                                       CU_STREAM_WAIT_VALUE_GEQ));
  return ok_status();
}

Result<const void*> ipc_signal_word(int peer, const IpcSignal& sig, int device, bool local) {
  if (sig.kind != IpcSignal::Kind::kCounter) return Error{kErrUnsupported, "not a counter signal"};
  return ipc_open(peer, counter_region(sig), device, local);
}

}  // namespace dtmpi::transport
