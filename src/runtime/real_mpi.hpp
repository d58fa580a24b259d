// The system MPI's entry points, reached with dlsym(RTLD_NEXT) so that dtmpi
// works preloaded, linked before -lmpi, and stacked in front of PMPI tools.
// Resolved once when the library is loaded; a name still missing then (MPI
// dlopen'ed later, e.g. by Python) is resolved at its first use.
#pragma once
#include <mpi.h>

#define DTMPI_REAL_FUNCTIONS(X) \
  X(MPI_Init)                   \
  X(MPI_Init_thread)            \
  X(MPI_Finalize)               \
  X(MPI_Type_commit)            \
  X(MPI_Type_free)              \
  X(MPI_Type_dup)               \
  X(MPI_Type_set_attr)          \
  X(MPI_Pack)                   \
  X(MPI_Unpack)                 \
  X(MPI_Pack_size)              \
  X(MPI_Send)                   \
  X(MPI_Recv)                   \
  X(MPI_Isend)                  \
  X(MPI_Irecv)                  \
  X(MPI_Sendrecv)                \
  X(MPI_Ssend)                   \
  X(MPI_Rsend)                   \
  X(MPI_Bsend)                   \
  X(MPI_Issend)                  \
  X(MPI_Irsend)                  \
  X(MPI_Ibsend)                  \
  X(MPI_Sendrecv_replace)        \
  X(MPI_Probe)                   \
  X(MPI_Dist_graph_create_adjacent) \
  X(MPI_Dist_graph_create)       \
  X(MPI_Cart_create)             \
  X(MPI_Alltoallv)               \
  X(MPI_Neighbor_alltoallv)      \
  X(MPI_Alltoallw)               \
  X(MPI_Neighbor_alltoallw)      \
  X(MPI_Alltoall)               \
  X(MPI_Ialltoall)              \
  X(MPI_Ialltoallv)             \
  X(MPI_Ialltoallw)             \
  X(MPI_Neighbor_alltoall)      \
  X(MPI_Ineighbor_alltoall)     \
  X(MPI_Ineighbor_alltoallv)    \
  X(MPI_Ineighbor_alltoallw)    \
  X(MPI_Allgather)              \
  X(MPI_Iallgather)             \
  X(MPI_Allgatherv)             \
  X(MPI_Iallgatherv)            \
  X(MPI_Neighbor_allgather)     \
  X(MPI_Ineighbor_allgather)    \
  X(MPI_Neighbor_allgatherv)    \
  X(MPI_Ineighbor_allgatherv)   \
  X(MPI_Gather)                 \
  X(MPI_Igather)                \
  X(MPI_Gatherv)                \
  X(MPI_Igatherv)               \
  X(MPI_Scatter)                \
  X(MPI_Iscatter)               \
  X(MPI_Scatterv)               \
  X(MPI_Iscatterv)              \
  X(MPI_Bcast)                  \
  X(MPI_Ibcast)                 \
  X(MPI_Allreduce)              \
  X(MPI_Iallreduce)             \
  X(MPI_Reduce)                 \
  X(MPI_Ireduce)                \
  X(MPI_Reduce_scatter_block)   \
  X(MPI_Ireduce_scatter_block)  \
  X(MPI_Reduce_scatter)         \
  X(MPI_Ireduce_scatter)        \
  X(MPI_Scan)                   \
  X(MPI_Iscan)                  \
  X(MPI_Exscan)                 \
  X(MPI_Iexscan)                \
  X(MPI_Reduce_local)           \
  X(MPI_Iprobe)                  \
  X(MPI_Wait)                    \
  X(MPI_Waitall)                 \
  X(MPI_Waitany)                 \
  X(MPI_Waitsome)                \
  X(MPI_Test)                    \
  X(MPI_Testall)                 \
  X(MPI_Testany)                 \
  X(MPI_Testsome)                \
  X(MPI_Request_free)            \
  X(MPI_Send_init)               \
  X(MPI_Ssend_init)              \
  X(MPI_Bsend_init)              \
  X(MPI_Rsend_init)              \
  X(MPI_Recv_init)               \
  X(MPI_Start)                   \
  X(MPI_Startall)                \
  X(MPI_Cancel)                  \
  X(MPI_Mprobe)                  \
  X(MPI_Improbe)                 \
  X(MPI_Mrecv)                   \
  X(MPI_Imrecv)                  \
  X(MPI_Request_get_status)

namespace dtmpi::runtime {

struct RealMpi {
#define DTMPI_DECLARE_REAL(name) decltype(&::name) name = nullptr;
  DTMPI_REAL_FUNCTIONS(DTMPI_DECLARE_REAL)
#undef DTMPI_DECLARE_REAL
};

extern RealMpi g_real;
void resolve_real_mpi();
[[noreturn]] void missing_real_symbol(const char* name);

}  // namespace dtmpi::runtime

// REAL(MPI_Send)(args...) calls the next implementation of MPI_Send.
#define REAL(name)                                                             \
  (__builtin_expect(::dtmpi::runtime::g_real.name != nullptr, 1)               \
       ? ::dtmpi::runtime::g_real.name                                         \
       : (::dtmpi::runtime::resolve_real_mpi(),                                \
          ::dtmpi::runtime::g_real.name ? ::dtmpi::runtime::g_real.name        \
                                        : (::dtmpi::runtime::missing_real_symbol(#name), \
                                           ::dtmpi::runtime::g_real.name)))
