#!/usr/bin/env bash
# Runs the unmodified demo twice, on the plain system MPI and with
# LD_PRELOAD=libdtmpi.so, prints both timings and fails unless the received
# bytes (checksums) agree.
#   run-demo.sh DEMO_BINARY LIBDTMPI MPIEXEC [NP] [demo args...]
set -euo pipefail
demo=$1 lib=$2 mpiexec=$3 np=${4:-2}
shift 4 || shift $#
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
preload=$lib
if [ "${DTMPI_TEST_SANITIZE:-OFF}" = "ON" ]; then
  # a sanitized libdtmpi needs the ASan runtime loaded first
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $lib"
  export ASAN_OPTIONS=detect_leaks=0
fi
plain=$("$mpiexec" -n "$np" "$demo" "$@")
with=$("$mpiexec" -n "$np" env LD_PRELOAD="$preload" "$demo" "$@")
get() { echo "$1" | awk -v k="$2" '$1 == k {print $2}'; }
echo "$plain" | head -1
printf '%-34s %14s %14s %8s\n' phase "system MPI" "with dtmpi" speedup
for k in sendrecv_of_datatypes_us pack_sendrecv_unpack_us; do
  a=$(get "$plain" $k) b=$(get "$with" $k)
  printf '%-34s %11s us %11s us %7.2fx\n' "$k" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN{print a/b}')"
done
ca=$(get "$plain" checksum) cb=$(get "$with" checksum)
if [ "$ca" = "$cb" ]; then
  echo "received bytes agree (checksum $ca)"
else
  echo "MISMATCH: checksum $ca without dtmpi, $cb with dtmpi" >&2
  exit 1
fi
