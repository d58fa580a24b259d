#!/usr/bin/env bash
# DTMPI_* values a variable does not take (issue 25: DTMPI_LOG=xyz and
# DTMPI_DISABLE=maybe were accepted silently): one warning each, from rank 0
# at MPI_Init, listing the accepted values; the run goes on with the defaults
# (dtmpi enabled, so its counters show it served the program).
#   check-config-warnings.sh LIBDTMPI MPIEXEC NP_FLAG PROGRAM [ARGS...]
set -uo pipefail
lib=$1 mpiexec=$2 npflag=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }
out=$(DTMPI_LOG=xyz DTMPI_DISABLE=maybe DTMPI_PIPELINE_CHUNK=12abc DTMPI_STATS=1 \
  "$mpiexec" "$npflag" 2 "$here/../run-preloaded.sh" "$lib" "$@" 2>&1) || fail "the run failed"
for want in "DTMPI_LOG=xyz is not one of error, warn, info, debug, decisions: using warn" \
            "DTMPI_DISABLE=maybe is not a boolean (1, 0, on, off, true, false, yes, no): using 0" \
            "DTMPI_PIPELINE_CHUNK=12abc is not a byte count of at least 4096 and at most 1024G (suffix K, M or G allowed): using 2097152"; do
  n=$(grep -cF "$want" <<<"$out")
  [ "$n" -eq 1 ] || fail "\"$want\" printed $n times (want once)"
done
grep -q "dtmpi stats rank 0" <<<"$out" || fail "dtmpi did not run with its defaults (no counters)"
echo "invalid values: one warning each, defaults used: ok"
