// The one way dtmpi reaches the system MPI: REAL(MPI_X)(...), the next
// definition of MPI_X after dtmpi's in the link order, found with
// dlsym(RTLD_NEXT). Every call dtmpi makes goes this way -- the application's
// calls it passes through and its own traffic (packed bytes, descriptors,
// its private communicator, datatype introspection) alike -- so that dtmpi
// works preloaded and linked before -lmpi, and a PMPI tool stacked behind it
// (LD_PRELOAD=libdtmpi.so:libtool.so) sees every MPI call that reaches the
// MPI library, not only the ones dtmpi passes through. dtmpi never calls
// PMPI_* itself: that would bypass such a tool for part of the traffic.
// Resolved once when the library is loaded; a name still missing then (MPI
// dlopen'ed later, e.g. by Python) is resolved at its first use.
#pragma once
#include <mpi.h>

#define DTMPI_REAL_FUNCTIONS(X) \
  X(MPI_Abort) \
  X(MPI_Accumulate) \
  X(MPI_Allgather) \
  X(MPI_Allgatherv) \
  X(MPI_Alloc_mem) \
  X(MPI_Allreduce) \
  X(MPI_Alltoall) \
  X(MPI_Alltoallv) \
  X(MPI_Alltoallw) \
  X(MPI_Barrier) \
  X(MPI_Bcast) \
  X(MPI_Bsend) \
  X(MPI_Bsend_init) \
  X(MPI_Cancel) \
  X(MPI_Cart_create) \
  X(MPI_Cart_shift) \
  X(MPI_Cartdim_get) \
  X(MPI_Comm_call_errhandler) \
  X(MPI_Comm_create) \
  X(MPI_Comm_create_group) \
  X(MPI_Comm_create_keyval) \
  X(MPI_Comm_dup) \
  X(MPI_Comm_dup_with_info) \
  X(MPI_Comm_free) \
  X(MPI_Comm_free_keyval) \
  X(MPI_Comm_get_attr) \
  X(MPI_Comm_get_errhandler) \
  X(MPI_Comm_group) \
  X(MPI_Comm_rank) \
  X(MPI_Comm_remote_group) \
  X(MPI_Comm_remote_size) \
  X(MPI_Comm_set_attr) \
  X(MPI_Comm_set_errhandler) \
  X(MPI_Comm_set_name) \
  X(MPI_Comm_size) \
  X(MPI_Comm_split) \
  X(MPI_Comm_split_type) \
  X(MPI_Comm_test_inter) \
  X(MPI_Compare_and_swap) \
  X(MPI_Dist_graph_create) \
  X(MPI_Dist_graph_create_adjacent) \
  X(MPI_Dist_graph_neighbors) \
  X(MPI_Dist_graph_neighbors_count) \
  X(MPI_Errhandler_free) \
  X(MPI_Error_string) \
  X(MPI_Exscan) \
  X(MPI_Fetch_and_op) \
  X(MPI_Finalize) \
  X(MPI_Free_mem) \
  X(MPI_Gather) \
  X(MPI_Gatherv) \
  X(MPI_Get) \
  X(MPI_Get_accumulate) \
  X(MPI_Get_count) \
  X(MPI_Get_elements_x) \
  X(MPI_Get_library_version) \
  X(MPI_Graph_neighbors) \
  X(MPI_Graph_neighbors_count) \
  X(MPI_Grequest_complete) \
  X(MPI_Grequest_start) \
  X(MPI_Group_free) \
  X(MPI_Group_size) \
  X(MPI_Group_translate_ranks) \
  X(MPI_Iallgather) \
  X(MPI_Iallgatherv) \
  X(MPI_Iallreduce) \
  X(MPI_Ialltoall) \
  X(MPI_Ialltoallv) \
  X(MPI_Ialltoallw) \
  X(MPI_Ibarrier) \
  X(MPI_Ibcast) \
  X(MPI_Ibsend) \
  X(MPI_Iexscan) \
  X(MPI_Igather) \
  X(MPI_Igatherv) \
  X(MPI_Improbe) \
  X(MPI_Imrecv) \
  X(MPI_Ineighbor_allgather) \
  X(MPI_Ineighbor_allgatherv) \
  X(MPI_Ineighbor_alltoall) \
  X(MPI_Ineighbor_alltoallv) \
  X(MPI_Ineighbor_alltoallw) \
  X(MPI_Info_create) \
  X(MPI_Info_get_nkeys) \
  X(MPI_Info_get_nthkey) \
  X(MPI_Info_get_valuelen) \
  X(MPI_Info_get) \
  X(MPI_Info_set) \
  X(MPI_Init) \
  X(MPI_Init_thread) \
  X(MPI_Iprobe) \
  X(MPI_Irecv) \
  X(MPI_Ireduce) \
  X(MPI_Ireduce_scatter) \
  X(MPI_Ireduce_scatter_block) \
  X(MPI_Irsend) \
  X(MPI_Iscan) \
  X(MPI_Iscatter) \
  X(MPI_Iscatterv) \
  X(MPI_Isend) \
  X(MPI_Issend) \
  X(MPI_Mprobe) \
  X(MPI_Mrecv) \
  X(MPI_Neighbor_allgather) \
  X(MPI_Neighbor_allgatherv) \
  X(MPI_Neighbor_alltoall) \
  X(MPI_Neighbor_alltoallv) \
  X(MPI_Neighbor_alltoallw) \
  X(MPI_Op_commutative) \
  X(MPI_Pack) \
  X(MPI_Pack_size) \
  X(MPI_Probe) \
  X(MPI_Put) \
  X(MPI_Query_thread) \
  X(MPI_Raccumulate) \
  X(MPI_Recv) \
  X(MPI_Recv_init) \
  X(MPI_Reduce) \
  X(MPI_Reduce_local) \
  X(MPI_Reduce_scatter) \
  X(MPI_Reduce_scatter_block) \
  X(MPI_Request_free) \
  X(MPI_Request_get_status) \
  X(MPI_Rget) \
  X(MPI_Rget_accumulate) \
  X(MPI_Rput) \
  X(MPI_Rsend) \
  X(MPI_Rsend_init) \
  X(MPI_Scan) \
  X(MPI_Scatter) \
  X(MPI_Scatterv) \
  X(MPI_Send) \
  X(MPI_Send_init) \
  X(MPI_Sendrecv) \
  X(MPI_Sendrecv_replace) \
  X(MPI_Ssend) \
  X(MPI_Ssend_init) \
  X(MPI_Start) \
  X(MPI_Startall) \
  X(MPI_Status_set_cancelled) \
  X(MPI_Status_set_elements_x) \
  X(MPI_Test) \
  X(MPI_Test_cancelled) \
  X(MPI_Testall) \
  X(MPI_Testany) \
  X(MPI_Testsome) \
  X(MPI_Topo_test) \
  X(MPI_Type_commit) \
  X(MPI_Type_contiguous) \
  X(MPI_Type_create_keyval) \
  X(MPI_Type_dup) \
  X(MPI_Type_free) \
  X(MPI_Type_get_contents) \
  X(MPI_Type_get_envelope) \
  X(MPI_Type_get_extent) \
  X(MPI_Type_get_true_extent) \
  X(MPI_Type_get_true_extent_x) \
  X(MPI_Type_set_attr) \
  X(MPI_Type_size) \
  X(MPI_Type_size_x) \
  X(MPI_Unpack) \
  X(MPI_Wait) \
  X(MPI_Waitall) \
  X(MPI_Waitany) \
  X(MPI_Waitsome) \
  X(MPI_Win_allocate) \
  X(MPI_Win_attach) \
  X(MPI_Win_call_errhandler) \
  X(MPI_Win_complete) \
  X(MPI_Win_create) \
  X(MPI_Win_create_dynamic) \
  X(MPI_Win_create_errhandler) \
  X(MPI_Win_create_keyval) \
  X(MPI_Win_delete_attr) \
  X(MPI_Win_detach) \
  X(MPI_Win_fence) \
  X(MPI_Win_flush) \
  X(MPI_Win_flush_all) \
  X(MPI_Win_flush_local) \
  X(MPI_Win_flush_local_all) \
  X(MPI_Win_free) \
  X(MPI_Win_free_keyval) \
  X(MPI_Win_get_attr) \
  X(MPI_Win_get_errhandler) \
  X(MPI_Win_get_group) \
  X(MPI_Win_get_info) \
  X(MPI_Win_get_name) \
  X(MPI_Win_lock) \
  X(MPI_Win_lock_all) \
  X(MPI_Win_post) \
  X(MPI_Win_set_attr) \
  X(MPI_Win_set_errhandler) \
  X(MPI_Win_set_info) \
  X(MPI_Win_set_name) \
  X(MPI_Win_shared_query) \
  X(MPI_Win_start) \
  X(MPI_Win_sync) \
  X(MPI_Win_test) \
  X(MPI_Win_unlock) \
  X(MPI_Win_unlock_all) \
  X(MPI_Win_wait)

// MPI-4 large-count forms, where the MPI has them (type/introspect.hpp).
#ifdef DTMPI_HAVE_MPI_LARGE_COUNT
#define DTMPI_REAL_FUNCTIONS_LARGE_COUNT(X) \
  X(MPI_Type_get_contents_c) \
  X(MPI_Type_get_envelope_c) \
  X(MPI_Put_c) \
  X(MPI_Get_c) \
  X(MPI_Accumulate_c) \
  X(MPI_Get_accumulate_c) \
  X(MPI_Rput_c) \
  X(MPI_Rget_c) \
  X(MPI_Raccumulate_c) \
  X(MPI_Rget_accumulate_c) \
  X(MPI_Win_create_c) \
  X(MPI_Win_allocate_c) \
  X(MPI_Win_shared_query_c)
#else
#define DTMPI_REAL_FUNCTIONS_LARGE_COUNT(X)
#endif

// Open MPI's window handle conversions are functions, which dtmpi defines
// over its own windows (interpose/rma_window.cpp); MPICH's are macros.
#ifdef OPEN_MPI
#define DTMPI_REAL_FUNCTIONS_WIN_F2C(X) \
  X(MPI_Win_c2f) \
  X(MPI_Win_f2c)
#else
#define DTMPI_REAL_FUNCTIONS_WIN_F2C(X)
#endif

namespace dtmpi::base {

struct RealMpi {
#define DTMPI_DECLARE_REAL(name) decltype(&::name) name = nullptr;
  DTMPI_REAL_FUNCTIONS(DTMPI_DECLARE_REAL)
  DTMPI_REAL_FUNCTIONS_LARGE_COUNT(DTMPI_DECLARE_REAL)
  DTMPI_REAL_FUNCTIONS_WIN_F2C(DTMPI_DECLARE_REAL)
#undef DTMPI_DECLARE_REAL
};

// Hidden, as every definition of this library (-fvisibility=hidden): said at
// the declarations read on the exported calls' fast paths too, so that those
// load them directly rather than through an address first (issue 29).
extern RealMpi g_real __attribute__((visibility("hidden")));
void resolve_real_mpi();
[[noreturn]] void missing_real_symbol(const char* name);

}  // namespace dtmpi::base

// REAL(MPI_Send)(args...) calls the next implementation of MPI_Send.
#define REAL(name)                                                             \
  (__builtin_expect(::dtmpi::base::g_real.name != nullptr, 1)               \
       ? ::dtmpi::base::g_real.name                                         \
       : (::dtmpi::base::resolve_real_mpi(),                                \
          ::dtmpi::base::g_real.name ? ::dtmpi::base::g_real.name        \
                                        : (::dtmpi::base::missing_real_symbol(#name), \
                                           ::dtmpi::base::g_real.name)))
