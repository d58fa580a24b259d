#include "runtime/stats.hpp"

#include "runtime/mapped_host.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "base/footprint.hpp"
#include "runtime/host_ranges.hpp"
#include "runtime/pointer_kind.hpp"
#include "type/registry.hpp"

namespace dtmpi::runtime {
namespace {

using Block = std::array<std::atomic<uint64_t>, static_cast<size_t>(Counter::kCount)>;

struct AllBlocks {
  std::mutex mu;
  std::vector<Block*> blocks;  // one per thread that ever counted; never freed
};

AllBlocks& all() {
  static AllBlocks* a = new AllBlocks;
  return *a;
}

Block* register_thread() {
  auto* b = new Block{};
  std::lock_guard lock(all().mu);
  all().blocks.push_back(b);
  return b;
}

void report_footprint(std::vector<footprint::Part>& out) {
  std::lock_guard lock(all().mu);
  out.push_back({"counters", "threads", static_cast<int64_t>(all().blocks.size() * sizeof(Block)), 0});
}
[[maybe_unused]] const bool g_footprint_registered = footprint::add_source(report_footprint);

}  // namespace

void count(Counter c, uint64_t n) {
  __attribute__((tls_model("initial-exec"))) thread_local Block* mine = register_thread();
  auto& slot = (*mine)[static_cast<size_t>(c)];
  slot.store(slot.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

uint64_t total(Counter c) {
  std::lock_guard lock(all().mu);
  uint64_t sum = 0;
  for (auto* b : all().blocks) sum += (*b)[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  return sum;
}

std::string format_stats() {
  auto v = [](Counter c) { return static_cast<unsigned long long>(total(c)); };
  const type::PlanCounts plans = type::plan_counts();  // plans are built at a type's first use
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "types planned %llu, left to MPI %llu; MPI_Pack %llu, MPI_Unpack %llu, with GPU "
                "buffers %llu by dtmpi (returned queued %llu, %llu bytes), %llu passed through; staged sends %llu, "
                "staged receives %llu; multi-message sends %llu (%llu in place), chunked sends %llu, batched sends %llu in %llu launches, receives %llu, CUDA IPC reads %llu, CUDA-aware sends %llu, persistent starts %llu; staged collectives %llu, "
                "point-to-point collectives %llu (pieces to itself %llu); staging buffers lent %llu, returned %llu; "
                "RMA windows %llu, operations %llu (%llu direct over CUDA IPC, %llu layout to layout), applied as target %llu; "
                "MPI_Alloc_mem ranges proven host %d; dtmpi's collective algorithms %llu; driver pointer queries %llu; mremap calls counted %llu; mremap calls reach dtmpi %s",
                static_cast<unsigned long long>(plans.planned), static_cast<unsigned long long>(plans.unplanned),
                v(Counter::kPacks),
                v(Counter::kUnpacks), v(Counter::kGpuPacks), v(Counter::kGpuPacksQueued), v(Counter::kPackedBytes), v(Counter::kForwarded),
                v(Counter::kStagedSends), v(Counter::kStagedRecvs), v(Counter::kMultiSends), v(Counter::kInPlaceSends), v(Counter::kChunkedSends), v(Counter::kBatchedPacks), v(Counter::kBatchLaunches),
                v(Counter::kMultiRecvs), v(Counter::kIpcReads), v(Counter::kDeviceSends), v(Counter::kPersistentStarts), v(Counter::kStagedCollectives),
                v(Counter::kP2pCollectives), v(Counter::kSelfPieces), v(Counter::kStagingAcquired), v(Counter::kStagingReleased),
                v(Counter::kRmaWindows), v(Counter::kRmaOps), v(Counter::kRmaDirect), v(Counter::kRmaLayoutKernels), v(Counter::kRmaApplied),
                host_range_count(), v(Counter::kTunedCollectives),
                static_cast<unsigned long long>(driver_pointer_queries()),
                static_cast<unsigned long long>(mremap_count()), mremap_seen() ? "yes" : "no");
  return buf;
}

}  // namespace dtmpi::runtime
