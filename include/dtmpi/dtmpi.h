/* dtmpi public C API. Applications need none of it: dtmpi works on unmodified
 * MPI programs. These calls let a program or a test ask what dtmpi is doing. */
#ifndef DTMPI_DTMPI_H
#define DTMPI_DTMPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version string of the loaded libdtmpi, e.g. "0.1.0". */
const char* dtmpi_version(void);
/* 1 when dtmpi's interposer is loaded and not disabled by DTMPI_DISABLE=1. */
int dtmpi_active(void);
/* 1 between dtmpi's MPI_Init (or MPI_Init_thread) and its MPI_Finalize when
 * dtmpi is active: the MPI_* calls of the process are dtmpi's, so device
 * buffers may be handed to them even where the system MPI is not CUDA-aware
 * (dtmpi::stencil asks this before it posts device buffers). 0 before
 * MPI_Init, after MPI_Finalize, and with DTMPI_DISABLE=1. */
int dtmpi_initialized(void);
/* Counters of what dtmpi did so far, as one line of text (valid until the next call). */
const char* dtmpi_stats(void);
/* Bytes held by dtmpi's own structures in this process (per-peer arrays, type
 * plans, request tables, staging buffers, ...), with the per-peer ones scaled
 * to a job of `ranks` ranks (<= 0: this job's size). */
long long dtmpi_memory_bytes(int ranks);
/* The same structure by structure, as one line of text (valid until the next call). */
const char* dtmpi_memory(void);

/* Where the buffers of a datatype live, said by the application (the
 * MPI-ACC datatype attribute): calls with a type that carries it skip dtmpi's
 * buffer classification (a check of the process's address ranges, or the CUDA
 * driver's pointer query of 100-150 ns for memory outside them). The keyval
 * is created at MPI_Init (MPI_KEYVAL_INVALID before, or where dtmpi is not
 * active). Set it on a type of your own, typically a duplicate:
 *
 *   MPI_Datatype dev_doubles;
 *   MPI_Type_dup(MPI_DOUBLE, &dev_doubles);
 *   MPI_Type_set_attr(dev_doubles, dtmpi_buffer_keyval(), DTMPI_BUFFER_DEVICE(0));
 *   MPI_Send(d_ptr, n, dev_doubles, peer, tag, comm);
 *
 * DTMPI_BUFFER_HOST: host memory (pageable or pinned); DTMPI_BUFFER_DEVICE(n):
 * memory of CUDA device n (cudaMalloc; managed memory is better left to the
 * classification). The value is trusted: a buffer that is not where it says
 * is undefined behaviour, as with a wrong count. A value naming no device of
 * the process is ignored with a warning. Duplicates of the type do not
 * inherit it; MPI_Type_delete_attr and MPI_Type_free remove it. The buffer of
 * MPI_Pack/MPI_Unpack described by the datatype follows it; the packed buffer
 * is classified. */
int dtmpi_buffer_keyval(void);
#define DTMPI_BUFFER_HOST ((void*)(intptr_t)-1)
#define DTMPI_BUFFER_DEVICE(n) ((void*)(intptr_t)(n))

/* Deterministic reductions, per communicator: with
 *   MPI_Comm_set_attr(comm, dtmpi_reduction_keyval(), DTMPI_REDUCTION_DETERMINISTIC);
 * MPI_Reduce and MPI_Allreduce on `comm` (and MPI_Ireduce, MPI_Iallreduce)
 * compute one fold in rank order, ((x_0 op x_1) op x_2) ..., from every
 * rank's input gathered at the root (Allreduce: at every rank): bitwise the
 * same result on every run and every rank, whatever algorithm would be chosen
 * otherwise, for any datatype and op. It costs a gather of all inputs. MPI_Comm_dup keeps the setting, MPI_Comm_delete_attr drops it;
 * intercommunicators keep the system MPI's reduction. The keyval exists from
 * MPI_Init to MPI_Finalize (MPI_KEYVAL_INVALID otherwise). Set from C (the
 * interposed MPI_Comm_set_attr sees it). docs/collectives.md. */
int dtmpi_reduction_keyval(void);
#define DTMPI_REDUCTION_DETERMINISTIC ((void*)(intptr_t)1)

#ifdef MPI_VERSION /* declared where mpi.h came first: the rest needs no MPI header */
/* The leaders of `comm`'s hierarchical collectives (DTMPI_COLL on a
 * communicator across nodes: one per node, or DTMPI_COLL_LEADERS per node,
 * each leading a contiguous group of its node's ranks): returns how many there
 * are and writes the first `max` of their ranks in `comm`, ascending, to
 * `leaders`; 0 where `comm`'s collectives are not hierarchical (one node,
 * DTMPI_COLL unset, before its first collective, or outside
 * MPI_Init..MPI_Finalize). Not collective. docs/collectives.md. */
int dtmpi_coll_leaders(MPI_Comm comm, int max, int* leaders);
#endif

#ifdef __cplusplus
}
#endif
#endif
