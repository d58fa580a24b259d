// dtmpi-probe-launch: host-side cost of the CUDA calls a GPU transfer makes
// (what the fixed microseconds of a small message are made of). Median of
// 2000 calls each, with the stream drained between rounds. Run on the GPU machine.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

__global__ void empty_kernel() {}
struct Args {
  long long v[24];
};
__global__ void args_kernel(Args a, char* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && a.v[0] == 12345) *p = 1;
}

double median_us(const std::function<void()>& f, cudaStream_t s) {
  std::vector<double> t;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 100; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    cudaStreamSynchronize(s);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

int main() {
  cudaSetDevice(0);
  cudaFree(nullptr);
  cudaStream_t nb, blk;
  cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&blk, cudaStreamDefault);
  char *a, *b;
  cudaMalloc(&a, 1 << 20);
  cudaMalloc(&b, 1 << 20);
  cudaEvent_t ev, ipc_ev;
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&ipc_ev, cudaEventDisableTiming | cudaEventInterprocess);
  CUdeviceptr word = reinterpret_cast<CUdeviceptr>(b);
  Args args{};
  struct Row {
    const char* what;
    std::function<void()> f;
    cudaStream_t s;
  };
  std::vector<Row> rows = {
      {"empty kernel, non-blocking stream", [&] { empty_kernel<<<1, 32, 0, nb>>>(); }, nb},
      {"empty kernel, blocking stream", [&] { empty_kernel<<<1, 32, 0, blk>>>(); }, blk},
      {"192-B argument kernel, 2112 blocks", [&] { args_kernel<<<2112, 256, 0, nb>>>(args, a); }, nb},
      {"kernel + cudaGetLastError", [&] { empty_kernel<<<1, 32, 0, nb>>>(); (void)cudaGetLastError(); }, nb},
      {"cudaMemcpyAsync D2D 1 KiB", [&] { cudaMemcpyAsync(a, b, 1024, cudaMemcpyDefault, nb); }, nb},
      {"cudaEventRecord", [&] { cudaEventRecord(ev, nb); }, nb},
      {"cudaEventRecord (interprocess event)", [&] { cudaEventRecord(ipc_ev, nb); }, nb},
      {"cudaStreamWaitEvent", [&] { cudaStreamWaitEvent(nb, ev, 0); }, nb},
      {"cudaEventQuery", [&] { (void)cudaEventQuery(ev); }, nb},
      {"cuStreamWriteValue64", [&] { cuStreamWriteValue64(reinterpret_cast<CUstream>(nb), word, 0, 0); }, nb},
      {"cuStreamWaitValue64 (satisfied)", [&] { cuStreamWaitValue64(reinterpret_cast<CUstream>(nb), word, 0, 0); }, nb},
      {"cudaGetDevice", [&] { int d; cudaGetDevice(&d); }, nb},
      {"cudaPointerGetAttributes", [&] { cudaPointerAttributes pa; cudaPointerGetAttributes(&pa, a); }, nb},
  };
  std::printf("%-40s %8s\n", "call (host side)", "us");
  for (auto& r : rows) std::printf("%-40s %8.2f\n", r.what, median_us(r.f, r.s));
  // end to end: launch + wait for an empty kernel
  std::printf("%-40s %8.2f\n", "empty kernel + cudaStreamSynchronize", median_us([&] {
                empty_kernel<<<1, 32, 0, nb>>>();
                cudaStreamSynchronize(nb);
              }, nb));
  return 0;
}
