// bench_stencil_limits.hpp. Each yardstick is set up on every rank, the
// ranks agree that all succeeded (MPI_LAND), and only then is it timed: the
// timer's barriers and reductions would otherwise wait for a rank that gave up.
#include "bench_stencil_limits.hpp"

#include <mpi.h>
#ifdef DTMPI_BENCH_GPU
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "stencil/domain_impl.hpp"
#include "stencil/partition.hpp"

namespace dtmpi::bench {
#ifdef DTMPI_BENCH_GPU
namespace {

bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

}  // namespace
#endif

double stencil_contiguous_limit(bool gpu, int64_t bytes, std::string& how, const StencilTimer& time) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  if (!gpu) {
    how = "memcpy";
    std::vector<char> from(n, 1), to(n, 0);
    return time([&] { std::memcpy(to.data(), from.data(), n); });
  }
#ifdef DTMPI_BENCH_GPU
  how = "cudaMemcpyAsync device to device";
  void *from = nullptr, *to = nullptr;
  cudaStream_t stream = nullptr;
  bool ok = cudaMalloc(&from, n) == cudaSuccess && cudaMalloc(&to, n) == cudaSuccess &&
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess;
  double t = 0;
  if (all_ranks(ok)) {
    t = time([&] {
      ok = ok && cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToDevice, stream) == cudaSuccess &&
           cudaStreamSynchronize(stream) == cudaSuccess;
    });
  } else {
    ok = false;
  }
  if (stream) cudaStreamDestroy(stream);
  cudaFree(from);
  cudaFree(to);
  cudaGetLastError();
  if (!ok) how = "cudaMemcpyAsync failed";
  return ok ? t : 0;
#else
  how = "no CUDA in this build";
  (void)time;
  return 0;
#endif
}

double stencil_driver_strided_copy(stencil::DistributedDomain& d, const stencil::Radius& r, int quantities,
                                   int64_t elem, const StencilTimer& time) {
#ifdef DTMPI_BENCH_GPU
  namespace st = stencil;
  cudaStream_t stream = nullptr;
  bool ok = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
            cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  const bool capturing = ok;
  for (const st::Subdomain& s : d.subdomains()) {
    const st::Box a = s.allocated();
    for (const st::Dim3 dir : st::directions()) {
      const st::Box from = st::send_box(s.box(), dir, r), to = st::ghost_box(s.box(), dir, r);
      if (to.empty() || !capturing) continue;
      for (int q = 0; q < quantities; ++q) {
        cudaMemcpy3DParms p{};
        p.srcPtr = make_cudaPitchedPtr(s.current_data(q), static_cast<size_t>(s.pitch(q)),
                                       static_cast<size_t>(a.size().x * elem), static_cast<size_t>(a.size().y));
        p.dstPtr = p.srcPtr;
        p.srcPos = make_cudaPos(static_cast<size_t>((from.lo.x - a.lo.x) * elem),
                                static_cast<size_t>(from.lo.y - a.lo.y), static_cast<size_t>(from.lo.z - a.lo.z));
        p.dstPos = make_cudaPos(static_cast<size_t>((to.lo.x - a.lo.x) * elem), static_cast<size_t>(to.lo.y - a.lo.y),
                                static_cast<size_t>(to.lo.z - a.lo.z));
        p.extent = make_cudaExtent(static_cast<size_t>(from.size().x * elem), static_cast<size_t>(from.size().y),
                                   static_cast<size_t>(from.size().z));
        p.kind = cudaMemcpyDeviceToDevice;
        ok = ok && cudaMemcpy3DAsync(&p, stream) == cudaSuccess;
      }
    }
  }
  cudaGraph_t graph = nullptr;
  if (capturing) ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok;
  cudaGraphExec_t exec = nullptr;
  ok = ok && cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess;
  double t = 0;
  if (all_ranks(ok)) {
    t = time([&] { ok = ok && cudaGraphLaunch(exec, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess; });
  } else {
    ok = false;
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  if (stream) cudaStreamDestroy(stream);
  cudaGetLastError();
  return ok ? t : 0;
#else
  (void)d;
  (void)r;
  (void)quantities;
  (void)elem;
  (void)time;
  return 0;
#endif
}

}  // namespace dtmpi::bench
