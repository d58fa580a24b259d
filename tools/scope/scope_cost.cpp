// CPU cost of CUDA calls (thesis section 3.3.7, Table 3.2, Figs. 3.12-3.13):
// cudaMemcpyAsync, cudaMemcpy3DPeerAsync, kernel launches with 0/1/256/4096 B
// of parameters, the aggregate call rate of several threads, CUDA graphs
// (instantiate, launch) against the number of captured operations and the
// same operations issued one by one; and dtmpi's own costs on GPU data:
// pointer classification of CUDA memory, one pack kernel launch. Each call is
// timed by the wall clock around it alone; the stream is drained every few
// calls outside the timing, so the queue never fills (a full queue would time
// the GPU, not the call).
#include <mpi.h>

#include <chrono>

#include "pack/gpu_pack.hpp"
#include "runtime/pointer_kind.hpp"
#include <cuda_runtime.h>  // make_cudaPitchedPtr, make_cudaExtent

#include "scope_gpu.hpp"
#include "scope_kernels.hpp"
#include "type/registry.hpp"

namespace dtmpi::scope::gpu {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kDrainEvery = 32;

Status call_loop(benchmark::State& st, cudaStream_t s, const std::function<Status()>& call) {
  int k = 0;
  for (auto _ : st) {
    const auto t0 = Clock::now();
    const Status r = call();
    st.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    if (!r) return r;
    if (++k % kDrainEvery == 0) DTMPI_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  DTMPI_CUDA_CHECK(cudaStreamSynchronize(s));
  return ok_status();
}

// ------------------------------------------------------------- one call ----
Status memcpy_cost(benchmark::State& st, bool from_host) {
  const int g = options().gpu;
  auto l = lane(g);
  auto src = from_host ? buffer(Mem::kPinned, -1, 0) : buffer(Mem::kDevice, g, 0);
  auto dst = buffer(Mem::kDevice, g, 1);
  if (!l) return l.error();
  if (!src) return src.error();
  if (!dst) return dst.error();
  DTMPI_CUDA_CHECK(cudaSetDevice(g));
  return call_loop(st, l.value()->stream, [&]() -> Status {
    DTMPI_CUDA_CHECK(cudaMemcpyAsync(dst.value(), src.value(), 64, cudaMemcpyDefault, l.value()->stream));
    return ok_status();
  });
}

Status memcpy3dpeer_cost(benchmark::State& st, int src_dev, int dst_dev) {
  auto l = lane(dst_dev);
  auto src = buffer(Mem::kDevice, src_dev, 0);
  auto dst = buffer(Mem::kDevice, dst_dev, 1);
  if (!l) return l.error();
  if (!src) return src.error();
  if (!dst) return dst.error();
  if (src_dev != dst_dev) DTMPI_TRY(set_peer_access(src_dev, dst_dev, true));
  cudaMemcpy3DPeerParms p{};  // a 64 x 2 x 2 box out of a 128-byte pitch
  p.srcPtr = make_cudaPitchedPtr(src.value(), 128, 64, 4);
  p.srcDevice = src_dev;
  p.dstPtr = make_cudaPitchedPtr(dst.value(), 64, 64, 2);
  p.dstDevice = dst_dev;
  p.extent = make_cudaExtent(64, 2, 2);
  DTMPI_CUDA_CHECK(cudaSetDevice(dst_dev));
  return call_loop(st, l.value()->stream, [&]() -> Status {
    DTMPI_CUDA_CHECK(cudaMemcpy3DPeerAsync(&p, l.value()->stream));
    return ok_status();
  });
}

Status launch_cost(benchmark::State& st, int param_bytes) {
  auto l = lane(options().gpu);
  if (!l) return l.error();
  DTMPI_CUDA_CHECK(cudaSetDevice(options().gpu));
  return call_loop(st, l.value()->stream, [&]() -> Status {
    DTMPI_CUDA_CHECK(kernels::empty(param_bytes, l.value()->stream));
    return ok_status();
  });
}

// -------------------------------------------------------------- threads ----
// Each thread its own stream; Google Benchmark adds the calls of all threads
// and divides by the time (items_per_second: the aggregate call rate).
Status threaded_cost(benchmark::State& st, bool launch) {
  const int g = options().gpu;
  DTMPI_CUDA_CHECK(cudaSetDevice(g));
  cudaStream_t s = nullptr;
  void *src = nullptr, *dst = nullptr;
  DTMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Status r = ok_status();
  if (!launch) r = first_error(DTMPI_CUDA_STATUS(cudaMalloc(&src, 64)), DTMPI_CUDA_STATUS(cudaMalloc(&dst, 64)));
  int k = 0;
  for (auto _ : st) {
    if (!r) break;
    r = launch ? DTMPI_CUDA_STATUS(kernels::empty(0, s))
               : DTMPI_CUDA_STATUS(cudaMemcpyAsync(dst, src, 64, cudaMemcpyDeviceToDevice, s));
    if (++k % 256 == 0) {
      st.PauseTiming();
      if (r) r = DTMPI_CUDA_STATUS(cudaStreamSynchronize(s));
      st.ResumeTiming();
    }
  }
  st.SetItemsProcessed(st.iterations());
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  if (src) cudaFree(src);
  if (dst) cudaFree(dst);
  return r;
}

// --------------------------------------------------------------- graphs ----
enum class GraphPart { kInstantiate, kLaunch, kDirect };

Status graph_cost(benchmark::State& st, int64_t ops, GraphPart part, bool memcpys) {
  const int g = options().gpu;
  auto l = lane(g);
  auto a = buffer(Mem::kDevice, g, 0), b = buffer(Mem::kDevice, g, 1);
  if (!l) return l.error();
  if (!a) return a.error();
  if (!b) return b.error();
  cudaStream_t s = l.value()->stream;
  DTMPI_CUDA_CHECK(cudaSetDevice(g));
  auto issue = [&]() -> Status {
    for (int64_t i = 0; i < ops; ++i) {
      if (memcpys)
        DTMPI_CUDA_CHECK(cudaMemcpyAsync(b.value() + 64 * i, a.value() + 64 * i, 64, cudaMemcpyDeviceToDevice, s));
      else
        DTMPI_CUDA_CHECK(kernels::empty(0, s));
    }
    return ok_status();
  };
  // `f` timed; `after` (untimed) and the stream drained between iterations
  auto timed = [&](const std::function<Status()>& f, const std::function<Status()>& after = nullptr) -> Status {
    for (auto _ : st) {
      const auto t0 = Clock::now();
      const Status r = f();
      st.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
      if (!r) return r;
      if (after) DTMPI_TRY(after());
      DTMPI_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    return ok_status();
  };
  if (part == GraphPart::kDirect) return timed(issue);
  cudaGraph_t graph = nullptr;
  DTMPI_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const Status captured = issue();
  DTMPI_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  DTMPI_TRY(captured);
  cudaGraphExec_t exec = nullptr;
  Status r = ok_status();
  if (part == GraphPart::kInstantiate) {
    r = timed(
        [&]() -> Status {
          DTMPI_CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
          return ok_status();
        },
        [&]() -> Status {
          DTMPI_CUDA_CHECK(cudaGraphExecDestroy(exec));
          exec = nullptr;
          return ok_status();
        });
  } else {
    r = DTMPI_CUDA_STATUS(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    if (r) r = timed([&]() -> Status {
      DTMPI_CUDA_CHECK(cudaGraphLaunch(exec, s));
      return ok_status();
    });
  }
  if (exec) cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return r;
}

// ---------------------------------------------------------------- dtmpi ----
Status classify_cuda(benchmark::State& st, Mem mem, bool driver) {
  auto p = buffer(mem, mem == Mem::kDevice ? options().gpu : -1, 0);
  if (!p) return p.error();
  const void* q = p.value() + 4096;
  for (auto _ : st) {
    if (driver) {
      cudaPointerAttributes a{};
      DTMPI_CUDA_CHECK(cudaPointerGetAttributes(&a, q));
      benchmark::DoNotOptimize(a);
    } else {
      auto info = runtime::pointer_info(q);
      benchmark::DoNotOptimize(info);
    }
  }
  return ok_status();
}

// The CPU cost of one dtmpi pack kernel launch: a 1 MiB vector of 256-byte
// blocks 512 bytes apart, device to device, as dtmpi queues it.
Status pack_launch_cost(benchmark::State& st) {
  const int g = options().gpu;
  auto l = lane(g);
  auto user = buffer(Mem::kDevice, g, 0), packed = buffer(Mem::kDevice, g, 1);
  if (!l) return l.error();
  if (!user) return user.error();
  if (!packed) return packed.error();
  MPI_Datatype t;
  DTMPI_MPI_CHECK(PMPI_Type_vector(4096, 256, 512, MPI_BYTE, &t));
  DTMPI_MPI_CHECK(PMPI_Type_commit(&t));
  auto plan = type::commit_plan(t);
  Status r = plan ? ok_status() : Status(Error{kErrUnsupported, "no plan for a vector type"});
  if (r) {
    DTMPI_CUDA_CHECK(cudaSetDevice(g));
    r = call_loop(st, l.value()->stream, [&]() -> Status {
      return pack::pack_device(*plan, 1, user.value(), packed.value(), g, l.value()->stream);
    });
  }
  type::forget_plan(t);
  PMPI_Type_free(&t);
  return r;
}

}  // namespace

void register_cost_rows() {
  const int g = options().gpu, p = options().peer;
  const std::string skip = machine().gpus ? "" : machine().no_gpu;
  auto row = [&](const std::string& name, Body body, std::vector<int64_t> args = {}, const char* arg_name = "") {
    add({.name = name, .body = std::move(body), .skip = skip, .sizes = std::move(args), .arg_name = arg_name});
  };
  row("cpu/cudaMemcpyAsync-h2d-64B/" + place(g), [](benchmark::State& st, int64_t) -> Status { return memcpy_cost(st, true); });
  row("cpu/cudaMemcpyAsync-d2d-64B/" + place(g), [](benchmark::State& st, int64_t) -> Status { return memcpy_cost(st, false); });
  row("cpu/cudaMemcpy3DPeerAsync/" + place(g),
      [g](benchmark::State& st, int64_t) -> Status { return memcpy3dpeer_cost(st, g, g); });
  if (p >= 0 && machine().peer_ok)
    row("cpu/cudaMemcpy3DPeerAsync/" + place(g, p),
        [g, p](benchmark::State& st, int64_t) -> Status { return memcpy3dpeer_cost(st, g, p); });
  row("cpu/launch/" + place(g), [](benchmark::State& st, int64_t n) -> Status { return launch_cost(st, static_cast<int>(n)); },
      {0, 1, 256, 4096}, "params");
  for (bool launch : {false, true})
    add({.name = std::string("cpu/threaded-") + (launch ? "launch/" : "cudaMemcpyAsync-d2d-64B/") + place(g),
         .body = [launch](benchmark::State& st, int64_t) -> Status { return threaded_cost(st, launch); },
         .skip = skip, .timing = Timing::kReal, .threads = {1, 2, 4, 8}, .multiplier = 0});
  const std::vector<int64_t> ops = {1, 4, 16, 64, 256};
  for (bool memcpys : {false, true})
    for (auto [part, what] : {std::pair{GraphPart::kInstantiate, "instantiate"}, std::pair{GraphPart::kLaunch, "launch"},
                              std::pair{GraphPart::kDirect, "direct"}})
      row(std::string("cpu/graph-") + what + (memcpys ? "/memcpys" : "/kernels"),
          [part, memcpys](benchmark::State& st, int64_t n) -> Status { return graph_cost(st, n, part, memcpys); }, ops, "ops");
  for (auto [mem, what] : {std::pair{Mem::kDevice, "device"}, std::pair{Mem::kPinned, "pinned"},
                           std::pair{Mem::kManaged, "managed"}}) {
    const Mem m = mem;
    add({.name = std::string("dtmpi/classify/") + what,
         .body = [m](benchmark::State& st, int64_t) -> Status { return classify_cuda(st, m, false); }, .skip = skip,
         .timing = Timing::kReal});
    add({.name = std::string("cpu/cudaPointerGetAttributes/") + what,
         .body = [m](benchmark::State& st, int64_t) -> Status { return classify_cuda(st, m, true); }, .skip = skip,
         .timing = Timing::kReal});
  }
  row(std::string(kPackRowPrefix) + "-launch/vector-1MiB-" + place(g),
      [](benchmark::State& st, int64_t) -> Status { return pack_launch_cost(st); });
}

}  // namespace dtmpi::scope::gpu
