/* dtmpi public C API. Applications need none of it: dtmpi works on unmodified
 * MPI programs. These calls let a program or a test ask what dtmpi is doing. */
#ifndef DTMPI_DTMPI_H
#define DTMPI_DTMPI_H

#ifdef __cplusplus
extern "C" {
#endif

/* Version string of the loaded libdtmpi, e.g. "0.1.0". */
const char* dtmpi_version(void);
/* 1 when dtmpi's interposer is loaded and not disabled by DTMPI_DISABLE=1. */
int dtmpi_active(void);
/* Counters of what dtmpi did so far, as one line of text (valid until the next call). */
const char* dtmpi_stats(void);
/* Bytes held by dtmpi's own structures in this process (per-peer arrays, type
 * plans, request tables, staging buffers, ...), with the per-peer ones scaled
 * to a job of `ranks` ranks (<= 0: this job's size). */
long long dtmpi_memory_bytes(int ranks);
/* The same structure by structure, as one line of text (valid until the next call). */
const char* dtmpi_memory(void);

#ifdef __cplusplus
}
#endif
#endif
