// DTMPI_* configuration, read once from the environment and validated (a value
// that is not one the variable accepts is reported and the default used instead). Every variable is
// listed in kVariables (and documented in docs/configuration.md, which
// tests/runtime check against this table).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dtmpi::runtime {

struct Config {
  bool disable = false;    // DTMPI_DISABLE: every call a pure pass-through
  bool host_pack = true;   // DTMPI_HOST_PACK: our CPU packer for MPI_Pack/Unpack
  bool host_staging = true;  // DTMPI_HOST_STAGING: dtmpi packs small-block host types (p2p and collectives)
  bool stats = false;      // DTMPI_STATS: print counters at MPI_Finalize
  std::string log = "warn";// DTMPI_LOG: error|warn|info|debug|decisions
  bool log_decisions = false;  // DTMPI_LOG=decisions: info level plus each first method decision
  std::string cuda = "auto"; // DTMPI_CUDA: auto|off (use GPUs at run time)
  // DTMPI_HOST_MAPS: auto|off, whether MPI_Init starts the mapping watch
  // (runtime/mapped_host.hpp) where an NVIDIA driver is present
  std::string host_maps = "auto";
  bool gpu_order_legacy = true;   // DTMPI_GPU_ORDER=legacy (default): wait for the legacy default stream
  std::string method = "auto";    // DTMPI_METHOD: auto|oneshot|staged|pipelined|device
  int64_t pipeline_chunk = 2 << 20;      // DTMPI_PIPELINE_CHUNK (measured: bench/results/gpu-pipeline-chunks-*)
  // DTMPI_HOST_RECV: auto|staged|direct, how host receive buffers of types
  // dtmpi packs on the sending side take the packed bytes
  std::string host_recv = "auto";
  // DTMPI_HOST_STAGING_MAX_BLOCK: host buffers whose datatype is non-contiguous
  // with a typical block of at most this many bytes are packed by dtmpi
  int64_t host_staging_max_block = 512;
  int64_t gated_unpack_max = 8 << 20;    // DTMPI_GATED_UNPACK_MAX: largest receive unpacked by a polling kernel
  // DTMPI_IPC_CHUNK_MIN: device-method messages above gated_unpack_max and of
  // at least this many bytes are packed and read in chunks (0: never)
  int64_t ipc_chunk_min = int64_t{8} << 20;
  // DTMPI_BATCH_PACKS: non-blocking device-method sends queue their packs as
  // one batch at the next MPI_Wait*/MPI_Test* (transport/batched_sends.hpp:
  // pack_later), for receivers that gate on another GPU only
  // (transport/send.cpp); off until measured on two GPUs
  bool batch_packs = false;
  // DTMPI_PACK_ASYNC: MPI_Pack/MPI_Unpack between two buffers in device
  // memory of one GPU return once queued on the legacy default stream
  bool pack_async = false;
  bool stencil_graphs = false;           // DTMPI_STENCIL_GRAPHS: dtmpi::stencil device domains replay CUDA graphs
  int stencil_overlap_blocks = 1;        // DTMPI_STENCIL_OVERLAP_BLOCKS: overlapped exchanges' blocks per SM
  bool stencil_shm = true;               // DTMPI_STENCIL_SHM: dtmpi::stencil host domains use shared memory in a node
  bool stencil_peer_access = true;       // DTMPI_STENCIL_PEER_ACCESS: a rank's GPUs reach each other by kernels over peer access
  std::string cuda_aware = "auto";       // DTMPI_CUDA_AWARE: auto|0|1
  int64_t ranks_per_node = 0;            // DTMPI_RANKS_PER_NODE: 0 = detect (emulates nodes when set)
  int64_t coll_leaders = 1;              // DTMPI_COLL_LEADERS: leaders (groups) per node of a hierarchical collective
  // DTMPI_CACHE_DIR, else $XDG_CACHE_HOME/dtmpi, else $HOME/.cache/dtmpi,
  // else /tmp/dtmpi-cache: where the performance model is kept
  std::string cache_dir;
  // DTMPI_RMA: auto (dtmpi serves windows whose memory is GPU memory on some
  // rank, and dynamic windows while GPUs are in use), all (every window: the
  // host test mode of the one-sided protocol), off (the system MPI's windows)
  std::string rma = "auto";
  // DTMPI_RMA_THREAD: auto (a progress thread for dtmpi's windows where the
  // application runs MPI_THREAD_MULTIPLE) or off
  std::string rma_thread = "auto";
  // DTMPI_RMA_COLLECTIVES: covered (a blocking collective takes its
  // non-blocking form to progress dtmpi's windows only on a communicator one
  // window covers) or all (every blocking collective, on every rank, always)
  bool rma_collectives_all = false;
  // DTMPI_COLL: system (default), tuned, or a list of <op>:<algorithm> and
  // "tuned" (src/coll/select.hpp); validated here against kCollAlgorithms
  std::string coll = "system";
  int64_t coll_scratch = 256 << 10;  // DTMPI_COLL_SCRATCH: bytes per slot (4) of each rank's scratch
  // DTMPI_COLL_TABLE: dtmpi-tune's table for DTMPI_COLL=tuned (empty: <cache_dir>/coll-<host>.json)
  std::string coll_table;
  std::string trace;  // DTMPI_TRACE: path prefix of the trace files (empty: off; base/trace.hpp)
};

// The test suite's own settings (DTMPI_TEST_*), kept apart from the
// production configuration: nothing but tests sets them, and each one says
// what it makes the library do that production never does.
struct TestHooks {
  // DTMPI_TEST_STAGE_HOST=1: host buffers of derived types take the staged
  // point-to-point path too, so CI without GPUs exercises it
  bool stage_host = false;
  // DTMPI_TEST_MANAGED_POOL=1: pooled "device" buffers are managed memory, so
  // a system MPI that is not CUDA-aware can stand in for one that is (with
  // DTMPI_CUDA_AWARE=1)
  bool managed_pool = false;
  // DTMPI_TEST_REFUSE_IPC=1: receivers do not map senders' GPU buffers over
  // CUDA IPC but ask for the bytes, as where a mapping fails
  bool refuse_ipc = false;
  // DTMPI_TEST_IPC_CACHE=N: at most N (>= 2) peer mappings kept open
  // (default 64), so that closing mappings is exercised
  int64_t ipc_cache = 0;
  // DTMPI_TEST_CHUNK_SAME_GPU=1: device-method messages are chunked
  // (DTMPI_IPC_CHUNK_MIN) to receivers on this GPU too, so that one GPU
  // exercises the chunked protocol
  bool chunk_same_gpu = false;
  // DTMPI_TEST_TWO_KERNEL_MOVE=1: an RMA put or get between two
  // non-contiguous GPU layouts packs into a buffer and unpacks from it (two
  // kernels) instead of one layout-to-layout kernel, to compare the two
  bool two_kernel_move = false;
  // DTMPI_TEST_SHM_FAIL_RANK=r: mapping a node's shared-memory segment fails
  // on world rank r (transport::map_node_shared), as where /dev/shm is full
  // or absent there: every rank of the node must then go without it
  // (collectives to the system MPI, dtmpi::stencil to messages), never hang
  int64_t shm_fail_rank = -1;
};

struct VariableDoc {
  const char* name;
  const char* default_value;
  const char* meaning;
};
extern const std::vector<VariableDoc> kVariables;

const Config& config();
// The operations and algorithms DTMPI_COLL may name ("op:alg"), one string
// per operation: "op alg1 alg2 ..." (src/coll implements each).
// (Constant data, not a std::vector: the environment may be read by another
// library object's static constructor, before a vector here is built.)
inline constexpr const char* kCollAlgorithms[] = {"barrier dissemination flat knomial4 knomial8 kary2 kary4 kary8 system",
                                                  "bcast binomial flat chain chain4k chain16k knomial4 knomial8 kary2 kary4 kary8 system",
                                                  "allreduce recdbl rsag tree knomial4 knomial8 chain chain4k chain16k kary2 kary4 kary8 system",
                                                  "reduce binomial flat knomial4 knomial8 chain chain4k chain16k kary2 kary4 kary8 system",
                                                  "allgather ring recdbl flat system",
                                                  "gather binomial flat knomial4 knomial8 kary2 kary4 kary8 system",
                                                  "scatter binomial flat knomial4 knomial8 kary2 kary4 kary8 system",
                                                  "alltoall pairwise flat bruck bruck4 system",
                                                  "reduce_scatter_block flat system",
                                                  "scan linear recdbl system",
                                                  "exscan linear recdbl system",
                                                  "allgatherv ring recdbl flat system",
                                                  "gatherv flat system",
                                                  "scatterv flat system",
                                                  "alltoallv pairwise flat bruck bruck4 system",
                                                  "reduce_scatter flat system"};
const TestHooks& test_hooks();
// Parses the environment again (tests, and MPI_Init after a fork); before
// MPI_Init's agreement below, which it would otherwise undo.
void reload_config();
// MPI_Init, once every rank has been heard (topology::agree_ranks_per_node):
// the DTMPI_RANKS_PER_NODE all ranks use, which may differ from this rank's.
void set_agreed_ranks_per_node(int64_t value);
// Known variables whose values were invalid, one sentence each ("DTMPI_LOG=xyz
// is not one of error, warn, ...: using warn"); each such variable takes its default.
std::vector<std::string> invalid_values();
// DTMPI_* variables set in the environment that dtmpi does not know.
std::vector<std::string> unknown_variables();

}  // namespace dtmpi::runtime
