#include "runtime/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "base/log.hpp"
#include "base/trace.hpp"

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
    {"DTMPI_STATS", "0", "1: each rank prints dtmpi's counters and the memory of its structures at MPI_Finalize"},
    {"DTMPI_CUDA", "auto", "auto: use GPUs when the CUDA driver and a device are present; off: never"},
    {"DTMPI_HOST_MAPS", "auto",
     "auto: with an NVIDIA driver present, MPI_Init starts watching the process's new mappings (perf events) so "
     "that mmap'd host buffers are proven host without a driver query; off: such buffers are asked of the driver"},
    {"DTMPI_METHOD", "auto",
     "GPU point-to-point method: oneshot, staged, pipelined, device or auto (see docs/point-to-point.md)"},
    {"DTMPI_PIPELINE_CHUNK", "2097152", "bytes per chunk of the pipelined method"},
    {"DTMPI_GATED_UNPACK_MAX", "8388608",
     "device method between two GPUs: receives up to this many bytes are unpacked by a kernel that polls the "
     "sender's ready counter itself; larger ones (and all with 0) wait for it with a stream wait first"},
    {"DTMPI_IPC_CHUNK_MIN", "8388608",
     "device method: messages larger than DTMPI_GATED_UNPACK_MAX and of at least this many bytes, to a receiver "
     "not known to share this GPU, are packed in up to 4 chunks, each with its own ready value, and the receiver "
     "reads each chunk as soon as it is packed; 0: never"},
    {"DTMPI_BATCH_PACKS", "0",
     "1: the packs of non-blocking device-method sends are queued together (one kernel launch, one ready-counter "
     "write) at the next MPI_Wait*/MPI_Test*, or by a helper thread 200 us later; 0 (default: no gain measured on two GPUs): each send queues its own"},
    {"DTMPI_PACK_ASYNC", "0",
     "1: MPI_Pack/MPI_Unpack between two device-memory buffers of one GPU return once the kernel is queued on the "
     "legacy default stream (CUDA library semantics: ordered before later legacy-stream, blocking-stream and dtmpi "
     "work; a non-blocking stream must synchronize first); 0 (default): they return when the bytes are there"},
    {"DTMPI_CUDA_AWARE", "auto",
     "auto: ask the system MPI (MPIX_Query_cuda_support); 1: treat it as CUDA-aware; 0: never hand it device memory"},
    {"DTMPI_RANKS_PER_NODE", "0",
     "placement (MPI_Dist_graph_create with reorder): ranks per node; 0 detects nodes, n emulates nodes of n "
     "consecutive ranks"},
    {"DTMPI_STENCIL_GRAPHS", "0",
     "1: dtmpi::stencil device domains record their pack, same-rank copy and unpack launches as CUDA graphs once "
     "and replay them every exchange (a domain's set_cuda_graphs() overrides it); 0: launched one by one"},
    {"DTMPI_STENCIL_OVERLAP_BLOCKS", "1",
     "dtmpi::stencil device domains, overlapped exchanges (start_exchange() .. finish_exchange()): blocks per SM of "
     "their same-GPU copy and unpack kernels, which then run beside the program's interior kernel (0-32; 0: a block "
     "per tile, the full grid of exchange(), whose blocks wait behind the interior's); a domain's "
     "set_overlap_blocks_per_sm() overrides it"},
    {"DTMPI_STENCIL_PEER_ACCESS", "1",
     "1: a dtmpi::stencil rank whose subdomains are on several GPUs (set_gpus()) moves bytes between them by kernels "
     "that reach the other GPU's memory over peer access, where every pair of its GPUs has it (else by copies); 0: "
     "always by copies (packed on one GPU, cudaMemcpyPeerAsync, unpacked on the other)"},
    {"DTMPI_STENCIL_SHM", "1",
     "1: dtmpi::stencil host-memory domains exchange with ranks of their node through a shared-memory segment "
     "(the sender packs into the receiver's buffer; a domain's set_host_shared_memory() overrides it); 0: MPI "
     "messages to every peer"},
    {"DTMPI_RMA", "auto",
     "one-sided communication: auto (dtmpi serves windows over GPU memory on any rank and dynamic windows while "
     "GPUs are in use; host windows stay the system MPI's), all (dtmpi serves every window), off (the system MPI "
     "serves every window; device memory in one is then an error) -- docs/rma.md"},
    {"DTMPI_RMA_COLLECTIVES", "covered",
     "covered: while dtmpi's windows exist, a blocking collective takes its non-blocking form (and a wait that "
     "progresses the windows) on a communicator all of whose processes are members of one window; all: every "
     "blocking collective does, on every rank, windows or not (slower collectives; for a program whose target of a "
     "passive-target epoch blocks in a collective on a larger communicator below MPI_THREAD_MULTIPLE) -- docs/rma.md"},
    {"DTMPI_RMA_THREAD", "auto",
     "auto: where the application runs MPI_THREAD_MULTIPLE, a thread of dtmpi's serves peers' one-sided requests to "
     "this rank's windows while any exists (a target in a blocking system-MPI call still answers); off: only inside "
     "MPI calls"},
    {"DTMPI_COLL", "system",
     "collectives on a communicator of one node: system (the system MPI's), tuned (dtmpi's built-in choice per "
     "operation and size), or a comma list of op:algorithm (barrier:dissemination|flat|knomial4|knomial8|kary2|kary4|kary8, "
     "bcast:binomial|flat|chain|chain4k|chain16k|knomial4|knomial8|kary2|kary4|kary8, "
     "allreduce:recdbl|rsag|tree|knomial4|knomial8|chain|chain4k|chain16k|kary2|kary4|kary8, "
     "reduce:binomial|flat|knomial4|knomial8|chain|chain4k|chain16k|kary2|kary4|kary8, "
     "allgather:ring|recdbl|flat, gather:binomial|flat|knomial4|knomial8|kary2|kary4|kary8, "
     "scatter:binomial|flat|knomial4|knomial8|kary2|kary4|kary8, alltoall:pairwise|flat|bruck|bruck4, reduce_scatter_block:flat, scan:linear|recdbl, "
     "exscan:linear|recdbl, allgatherv:ring|recdbl|flat, gatherv:flat, scatterv:flat, alltoallv:pairwise|flat|bruck|bruck4, "
     "reduce_scatter:flat; "
     "any op:system) and optionally tuned for the ops not named "
     "-- docs/collectives.md"},
    {"DTMPI_COLL_TABLE", "$DTMPI_CACHE_DIR/coll-<host>.json",
     "the table dtmpi-tune writes and DTMPI_COLL=tuned reads (the measured best algorithm per operation, size and "
     "communicator; without one, tuned is the built-in choice)"},
    {"DTMPI_COLL_LEADERS", "1",
     "DTMPI_COLL across nodes: leaders per node (1-1024); each leads a contiguous group of its node's ranks, whose "
     "intra-node phases run over the group's shared memory while the leaders meet through the system MPI"},
    {"DTMPI_COLL_SCRATCH", "262144", "DTMPI_COLL: bytes of each of the 4 shared scratch slots per rank (larger messages go in chunks of this size)"},
    {"DTMPI_TRACE", "",
     "path prefix: each rank writes timestamped trace points of its transfers to <prefix>.<rank>.txt at MPI_Finalize "
     "(tools/trace_timeline.py merges them)"},
    {"DTMPI_GPU_ORDER", "legacy",
     "legacy: each dtmpi GPU operation first waits for the legacy default stream (so a preceding cudaMemcpy from "
     "pageable memory, which may return before the device buffer is written, is complete); stream: no such wait"},
};

namespace {

// Problems found in the values of known variables by the last read, reported
// once by rank 0 at MPI_Init (runtime/lifecycle.cpp) rather than here: the
// environment is read in every process, and a warning per rank is noise.
std::vector<std::string>& problems() {
  static std::vector<std::string> p;
  return p;
}

const char* value_of(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string lower(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A free-form value (a path): the empty string when unset.
std::string text(const char* name) {
  const char* v = value_of(name);
  return v ? v : "";
}

// Where the performance model is kept: DTMPI_CACHE_DIR, else the XDG cache
// directory, else ~/.cache, else /tmp (the non-DTMPI variables are the
// desktop conventions every tool follows).
std::string cache_dir() {
  if (const char* d = value_of("DTMPI_CACHE_DIR")) return d;
  if (const char* x = value_of("XDG_CACHE_HOME")) return std::string(x) + "/dtmpi";
  if (const char* h = value_of("HOME")) return std::string(h) + "/.cache/dtmpi";
  return "/tmp/dtmpi-cache";
}

void reject(const char* name, const char* value, const std::string& expected, const std::string& used) {
  problems().push_back(std::string(name) + "=" + value + " is not " + expected + ": using " + used);
}

// A boolean: 1/0, on/off, true/false, yes/no (any case). Anything else is a
// typo, not a silent "on" (DTMPI_DISABLE=maybe used to disable dtmpi).
bool flag(const char* name, bool dflt) {
  const char* v = value_of(name);
  if (!v) return dflt;
  const std::string s = lower(v);
  if (s == "1" || s == "on" || s == "true" || s == "yes") return true;
  if (s == "0" || s == "off" || s == "false" || s == "no") return false;
  reject(name, v, "a boolean (1, 0, on, off, true, false, yes, no)", dflt ? "1" : "0");
  return dflt;
}

// One of `values` (any case), or an alias of one; the result is the value's
// canonical spelling, which the rest of the code compares against.
std::string choice(const char* name, const char* dflt, std::initializer_list<const char*> values,
                   std::initializer_list<std::pair<const char*, const char*>> aliases = {}) {
  const char* v = value_of(name);
  if (!v) return dflt;
  const std::string s = lower(v);
  for (const char* c : values)
    if (s == c) return c;
  for (const auto& [alias, canonical] : aliases)
    if (s == alias) return canonical;
  std::string expected = "one of ";
  for (const char* c : values) expected += std::string(c) + (c == *(values.end() - 1) ? "" : ", ");
  reject(name, v, expected, dflt);
  return dflt;
}

constexpr int64_t kMaxBytes = int64_t{1} << 40;  // 1 TiB: larger is a typo, not a setting

// A non-negative integer in [min, max]; with `suffixes`, a byte count that may
// end in K, M or G (optionally KiB/KB, ...: powers of 1024). Trailing text,
// signs and overflow are rejected rather than read as far as they parse.
int64_t number(const char* name, int64_t dflt, int64_t min, int64_t max, bool suffixes) {
  const char* v = value_of(name);
  if (!v) return dflt;
  const std::string s = lower(v);
  size_t i = 0;
  int64_t n = 0;
  bool ok = !s.empty() && std::isdigit(static_cast<unsigned char>(s[0]));
  for (; ok && i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    if (n > (INT64_MAX - 9) / 10) {  // the next digit would overflow
      ok = false;
      break;
    }
    n = n * 10 + (s[i] - '0');
  }
  if (ok && i < s.size()) {
    const std::string unit = s.substr(i);
    int shift = -1;
    if (suffixes) {
      for (const auto& [u, sh] : {std::pair{"k", 10}, {"m", 20}, {"g", 30}})
        if (unit == u || unit == std::string(u) + "b" || unit == std::string(u) + "ib") shift = sh;
    }
    if (shift < 0 || n > (INT64_MAX >> shift)) ok = false;
    else n <<= shift;
  }
  if (!ok || n < min || n > max) {
    std::string expected = std::string(suffixes ? "a byte count" : "an integer") + " of at least " +
                           std::to_string(min);
    if (max < INT32_MAX) expected += " and at most " + std::to_string(max);
    if (suffixes && max == kMaxBytes) expected += " and at most 1024G";
    if (suffixes) expected += " (suffix K, M or G allowed)";
    reject(name, v, expected, std::to_string(dflt));
    return dflt;
  }
  return n;
}

// DTMPI_COLL: "system", "tuned", or a comma list of "tuned" and op:algorithm
// items naming kCollAlgorithms; anything else is rejected as a whole.
std::string coll_choice() {
  const char* v = value_of("DTMPI_COLL");
  if (!v) return "system";
  const std::string s = lower(v);
  bool ok = true;
  size_t at = 0;
  while (ok && at <= s.size()) {
    const size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    at = end + 1;
    if (item == "tuned" || item == "system") continue;
    const size_t colon = item.find(':');
    bool known = false;
    for (const std::string row : kCollAlgorithms) {
      const std::string op = row.substr(0, row.find(' '));
      if (colon == std::string::npos || item.substr(0, colon) != op) continue;
      const std::string alg = " " + item.substr(colon + 1) + " ";
      known = (row + " ").find(alg) != std::string::npos && alg.size() > 2;
    }
    ok = known;
  }
  if (ok) return s;
  reject("DTMPI_COLL", v, "system, tuned or a comma list of op:algorithm (docs/configuration.md)", "system");
  return "system";
}

int level_of(const std::string& s) {
  if (s == "error") return 0;
  if (s == "info" || s == "decisions") return 2;
  if (s == "debug") return 3;
  return 1;
}

Config read_environment() {
  problems().clear();
  Config c;
  c.disable = flag("DTMPI_DISABLE", false);
  c.host_pack = flag("DTMPI_HOST_PACK", true);
  c.host_staging = flag("DTMPI_HOST_STAGING", true);
  c.stats = flag("DTMPI_STATS", false);
  c.log = choice("DTMPI_LOG", "warn", {"error", "warn", "info", "debug", "decisions"}, {{"warning", "warn"}});
  c.log_decisions = c.log == "decisions";
  c.cuda = choice("DTMPI_CUDA", "auto", {"auto", "off"}, {{"0", "off"}, {"no", "off"}, {"false", "off"}});
  c.host_maps = choice("DTMPI_HOST_MAPS", "auto", {"auto", "off"}, {{"0", "off"}, {"no", "off"}, {"false", "off"}});
  c.gpu_order_legacy = choice("DTMPI_GPU_ORDER", "legacy", {"legacy", "stream"}) == "legacy";
  c.method = choice("DTMPI_METHOD", "auto", {"auto", "oneshot", "staged", "pipelined", "device"});
  c.pipeline_chunk = number("DTMPI_PIPELINE_CHUNK", int64_t{2} << 20, 4096, kMaxBytes, true);
  c.host_recv = choice("DTMPI_HOST_RECV", "auto", {"auto", "staged", "direct"});
  c.host_staging_max_block = number("DTMPI_HOST_STAGING_MAX_BLOCK", 512, 1, kMaxBytes, true);
  c.gated_unpack_max = number("DTMPI_GATED_UNPACK_MAX", int64_t{8} << 20, 0, kMaxBytes, true);
  c.ipc_chunk_min = number("DTMPI_IPC_CHUNK_MIN", int64_t{8} << 20, 0, kMaxBytes, true);
  c.batch_packs = flag("DTMPI_BATCH_PACKS", false);
  c.pack_async = flag("DTMPI_PACK_ASYNC", false);
  c.stencil_graphs = flag("DTMPI_STENCIL_GRAPHS", false);
  c.stencil_shm = flag("DTMPI_STENCIL_SHM", true);
  c.stencil_peer_access = flag("DTMPI_STENCIL_PEER_ACCESS", true);
  c.stencil_overlap_blocks = static_cast<int>(number("DTMPI_STENCIL_OVERLAP_BLOCKS", 1, 0, 32, false));
  c.cuda_aware = choice("DTMPI_CUDA_AWARE", "auto", {"auto", "1", "0"},
                        {{"yes", "1"}, {"on", "1"}, {"true", "1"}, {"no", "0"}, {"off", "0"}, {"false", "0"}});
  c.ranks_per_node = number("DTMPI_RANKS_PER_NODE", 0, 0, INT32_MAX, false);
  c.rma = choice("DTMPI_RMA", "auto", {"auto", "all", "off"}, {{"0", "off"}, {"1", "all"}});
  c.rma_thread = choice("DTMPI_RMA_THREAD", "auto", {"auto", "off"}, {{"0", "off"}});
  c.rma_collectives_all = choice("DTMPI_RMA_COLLECTIVES", "covered", {"covered", "all"}) == "all";
  c.coll = coll_choice();
  c.coll_scratch = number("DTMPI_COLL_SCRATCH", 256 << 10, 4096, int64_t{1} << 30, true);
  c.coll_leaders = number("DTMPI_COLL_LEADERS", 1, 1, 1024, false);
  c.cache_dir = cache_dir();
  c.coll_table = text("DTMPI_COLL_TABLE");
  c.trace = text("DTMPI_TRACE");
  log::g_level.store(level_of(c.log));
  trace::configure(c.trace.c_str());
  return c;
}

TestHooks read_test_hooks() {
  TestHooks t;
  t.stage_host = flag("DTMPI_TEST_STAGE_HOST", false);
  t.managed_pool = flag("DTMPI_TEST_MANAGED_POOL", false);
  t.refuse_ipc = flag("DTMPI_TEST_REFUSE_IPC", false);
  t.ipc_cache = number("DTMPI_TEST_IPC_CACHE", 0, 0, INT32_MAX, false);
  t.chunk_same_gpu = flag("DTMPI_TEST_CHUNK_SAME_GPU", false);
  t.two_kernel_move = flag("DTMPI_TEST_TWO_KERNEL_MOVE", false);
  t.shm_fail_rank = number("DTMPI_TEST_SHM_FAIL_RANK", -1, 0, INT32_MAX, false);
  return t;
}

TestHooks& hooks() {
  static TestHooks t = read_test_hooks();
  return t;
}

// Read on first use (a function-local static: no dependence on the order in
// which the library's static objects are constructed).
Config& current() {
  static Config c = read_environment();
  return c;
}

}  // namespace

void reload_config() {
  current() = read_environment();
  hooks() = read_test_hooks();
}

const Config& config() { return current(); }
void set_agreed_ranks_per_node(int64_t value) { current().ranks_per_node = value; }
const TestHooks& test_hooks() { return hooks(); }

namespace {
// Read when the library is loaded, so that tracing (DTMPI_TRACE) covers the
// first calls too.
__attribute__((constructor)) void read_at_load() { (void)config(); }
}  // namespace

std::vector<std::string> invalid_values() {
  (void)config();  // the first read fills the list
  return problems();
}

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
