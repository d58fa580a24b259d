#include "runtime/config.hpp"

#include <cstdlib>
#include <cstring>

#include "base/log.hpp"

extern char** environ;

namespace dtmpi::runtime {

const std::vector<VariableDoc> kVariables = {
    {"DTMPI_DISABLE", "0", "1: every MPI call goes straight to the system MPI (pure pass-through)"},
    {"DTMPI_HOST_PACK", "1",
     "0: MPI_Pack/MPI_Unpack on host memory use the system MPI instead of dtmpi's packer"},
    {"DTMPI_HOST_STAGING", "1",
     "1: host buffers whose datatype is non-contiguous with blocks of at most 512 bytes are packed by dtmpi and "
     "travel as bytes (point-to-point and collectives); 0: the system MPI takes the user's datatypes"},
    {"DTMPI_HOST_RECV", "auto",
     "host receive buffers of types dtmpi packs: staged (land the bytes, dtmpi unpacks), direct (the system MPI "
     "unpacks the MPI_PACKED bytes with the receiver's datatype), auto (direct with Open MPI, staged otherwise)"},
    {"DTMPI_HOST_STAGING_MAX_BLOCK", "512",
     "DTMPI_HOST_STAGING: the largest typical block (bytes) of a host datatype that dtmpi packs"},
    {"DTMPI_LOG", "warn", "log level on stderr: error, warn, info, debug, or decisions (info + each first method choice)"},
    {"DTMPI_CACHE_DIR", "$XDG_CACHE_HOME/dtmpi", "where dtmpi-measure writes and MPI_Init reads the performance model"},
    {"DTMPI_STATS", "0", "1: each rank prints dtmpi's counters at MPI_Finalize"},
    {"DTMPI_CUDA", "auto", "auto: use GPUs when the CUDA driver and a device are present; off: never"},
    {"DTMPI_METHOD", "auto",
     "GPU point-to-point method: oneshot, staged, pipelined, device or auto (see docs/point-to-point.md)"},
    {"DTMPI_PIPELINE_CHUNK", "2097152", "bytes per chunk of the pipelined method"},
    {"DTMPI_GATED_UNPACK_MAX", "8388608",
     "device method between two GPUs: receives up to this many bytes are unpacked by a kernel that polls the "
     "sender's ready counter itself; larger ones (and all with 0) wait for it with a stream wait first"},
    {"DTMPI_IPC_CHUNK_MIN", "0",
     "device method: messages larger than DTMPI_GATED_UNPACK_MAX and of at least this many bytes are packed in up "
     "to 4 chunks, each with its own ready value, and the receiver reads each chunk as soon as it is packed; 0: never"},
    {"DTMPI_BATCH_PACKS", "0",
     "1: the packs of non-blocking device-method sends are queued together (one kernel launch, one ready-counter "
     "write) at the next MPI_Wait*/MPI_Test*, or by a helper thread 200 us later; 0 (default until measured on two GPUs): each send queues its own"},
    {"DTMPI_PACK_ASYNC", "0",
     "1: MPI_Pack/MPI_Unpack between two device-memory buffers of one GPU return once the kernel is queued on the "
     "legacy default stream (CUDA library semantics: ordered before later legacy-stream, blocking-stream and dtmpi "
     "work; a non-blocking stream must synchronize first); 0 (default): they return when the bytes are there"},
    {"DTMPI_CUDA_AWARE", "auto",
     "auto: ask the system MPI (MPIX_Query_cuda_support); 1: treat it as CUDA-aware; 0: never hand it device memory"},
    {"DTMPI_RANKS_PER_NODE", "0",
     "placement (MPI_Dist_graph_create with reorder): ranks per node; 0 detects nodes, n emulates nodes of n "
     "consecutive ranks"},
    {"DTMPI_TRACE", "",
     "path prefix: each rank writes timestamped trace points of its transfers to <prefix>.<rank>.txt at MPI_Finalize "
     "(tools/trace_timeline.py merges them)"},
    {"DTMPI_GPU_ORDER", "legacy",
     "legacy: each dtmpi GPU operation first waits for the legacy default stream (so a preceding cudaMemcpy from "
     "pageable memory, which may return before the device buffer is written, is complete); stream: no such wait"},
};

namespace {

bool flag(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "false") == 0 ||
           std::strcmp(v, "no") == 0);
}

std::string text(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return v && *v ? v : dflt;
}

// A non-negative integer (a byte count may carry a K/M/G suffix), at least `min`.
int64_t number(const char* name, int64_t dflt, int64_t min) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (end && (*end == 'k' || *end == 'K')) n <<= 10;
  if (end && (*end == 'm' || *end == 'M')) n <<= 20;
  if (end && (*end == 'g' || *end == 'G')) n <<= 30;
  if (end == v || n < min) {
    DTMPI_LOG(kWarn, "%s=%s is not a number of at least %lld: using %lld", name, v,
              static_cast<long long>(min), static_cast<long long>(dflt));
    return dflt;
  }
  return n;
}

int level_of(const std::string& s) {
  if (s == "error") return 0;
  if (s == "info" || s == "decisions") return 2;
  if (s == "debug") return 3;
  return 1;
}

Config read_environment() {
  Config c;
  c.disable = flag("DTMPI_DISABLE", false);
  c.host_pack = flag("DTMPI_HOST_PACK", true);
  c.host_staging = flag("DTMPI_HOST_STAGING", true);
  c.stats = flag("DTMPI_STATS", false);
  c.log = text("DTMPI_LOG", "warn");
  c.log_decisions = c.log == "decisions";
  c.cuda = text("DTMPI_CUDA", "auto");
  c.gpu_order_legacy = text("DTMPI_GPU_ORDER", "legacy") != "stream";
  c.method = text("DTMPI_METHOD", "auto");
  if (c.method != "auto" && c.method != "oneshot" && c.method != "staged" && c.method != "pipelined" &&
      c.method != "device") {
    DTMPI_LOG(kWarn, "DTMPI_METHOD=%s is not oneshot, staged, pipelined, device or auto: using auto", c.method.c_str());
    c.method = "auto";
  }
  c.pipeline_chunk = number("DTMPI_PIPELINE_CHUNK", int64_t{2} << 20, 4096);
  c.host_recv = text("DTMPI_HOST_RECV", "auto");
  if (c.host_recv != "auto" && c.host_recv != "staged" && c.host_recv != "direct") {
    DTMPI_LOG(kWarn, "DTMPI_HOST_RECV=%s is not auto, staged or direct: using auto", c.host_recv.c_str());
    c.host_recv = "auto";
  }
  c.host_staging_max_block = number("DTMPI_HOST_STAGING_MAX_BLOCK", 512, 1);
  c.gated_unpack_max = number("DTMPI_GATED_UNPACK_MAX", int64_t{8} << 20, 0);
  c.ipc_chunk_min = number("DTMPI_IPC_CHUNK_MIN", 0, 0);
  c.batch_packs = flag("DTMPI_BATCH_PACKS", false);
  c.pack_async = flag("DTMPI_PACK_ASYNC", false);
  c.cuda_aware = text("DTMPI_CUDA_AWARE", "auto");
  c.ranks_per_node = number("DTMPI_RANKS_PER_NODE", 0, 0);
  c.test_stage_host = flag("DTMPI_TEST_STAGE_HOST", false);
  c.test_managed_pool = flag("DTMPI_TEST_MANAGED_POOL", false);
  c.test_refuse_ipc = flag("DTMPI_TEST_REFUSE_IPC", false);
  c.test_ipc_cache = number("DTMPI_TEST_IPC_CACHE", 0, 0);
  log::g_level.store(level_of(c.log));
  return c;
}

// Read on first use (a function-local static: no dependence on the order in
// which the library's static objects are constructed).
Config& current() {
  static Config c = read_environment();
  return c;
}

}  // namespace

void reload_config() { current() = read_environment(); }

const Config& config() { return current(); }

std::vector<std::string> unknown_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "DTMPI_", 6) != 0) continue;
    std::string name(*e, std::strcspn(*e, "="));
    bool known = false;
    for (const auto& v : kVariables) known = known || name == v.name;
    // DTMPI_TEST_* are reserved for the test suite's own settings
    if (!known && name.rfind("DTMPI_TEST_", 0) != 0) out.push_back(name);
  }
  return out;
}

}  // namespace dtmpi::runtime
