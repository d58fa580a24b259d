// Finding out where a buffer lives (host, pinned host, device or managed
// memory: pack/memory_kind.hpp). The header is CUDA-free; without CUDA (at build or run time) every pointer is
// host memory. src/runtime/pointer_kind.cpp (CUDA builds) and
// pointer_kind_nocuda.cpp.
#pragma once
#include <atomic>
#include <cstdint>

#include "pack/memory_kind.hpp"
#include "runtime/host_ranges.hpp"

namespace dtmpi::runtime {

// The plain types are pack's (pack/memory_kind.hpp: the GPU pack dispatch
// below runtime chooses by them); runtime, which finds them out, names them too.
using pack::kind_name;
using pack::MemKind;
using pack::on_gpu;
using pack::PointerInfo;

// Classifies `p` for moving its bytes: whether it is GPU memory (device,
// managed, IPC-mapped) and where. Host memory the process's layout proves is
// not CUDA's (runtime/host_ranges.hpp: the brk heap, the caller's stack, the
// executable's data, MPI_Alloc_mem's memory until MPI_Free_mem) is answered
// kHost without a driver call -- also where
// the application page-locked it with cudaHostRegister; every other address
// is asked of the driver once per call (pinned host memory then kPinnedHost),
// its CUDA allocations remembered as address ranges validated by the
// driver's buffer id. Never wrong about GPU vs host.
namespace pointer_kind_detail {
// 1: GPUs in use (classify), 0: not (every pointer is host), -1: not known
// yet (the first call learns it)
extern std::atomic<int> g_classify __attribute__((visibility("hidden")));
PointerInfo pointer_info_slow(const void* p);
}  // namespace pointer_kind_detail
// Inlined: on host memory the process's layout proves, loads and compares only.
[[gnu::always_inline]] inline PointerInfo pointer_info(const void* p) {
  const int classify = pointer_kind_detail::g_classify.load(std::memory_order_relaxed);
  if (p == nullptr || classify == 0) return PointerInfo{};
  if (classify == 1 && provably_host(p)) return PointerInfo{};
  return pointer_kind_detail::pointer_info_slow(p);
}
// True where pointer_info(p) says host memory without a call: no GPUs in
// use, or an address the layout proves. False: ask pointer_info.
[[gnu::always_inline]] inline bool host_without_call(const void* p) {
  const int classify = pointer_kind_detail::g_classify.load(std::memory_order_relaxed);
  if (p == nullptr || classify == 0) return true;
  return classify == 1 && provably_host_no_call(p);
}
// The driver's full answer, pinned registrations included: for a host buffer
// whose pinning decides how a GPU copies into or out of it (MPI_Pack of
// device data into a user's host buffer).
PointerInfo pointer_info_exact(const void* p);
// Driver pointer queries made so far by this process (tests, dtmpi-bench).
uint64_t driver_pointer_queries();

}  // namespace dtmpi::runtime
