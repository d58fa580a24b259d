#!/usr/bin/env bash
# The CPU halo with each variant measured alone (its own processes, --only):
# in dtmpi-bench halo's interleaved rounds every variant runs right after
# another, whose cache footprint it inherits -- at 32^3 (a working set near
# the last-level cache) that moved the dtmpi/system ratios by +-15% (parity).
# Alternates system and dtmpi runs of each variant; prints the median
# ms/exchange of each and the ratio system/dtmpi (> 1: dtmpi faster).
#   scripts/halo-cpu-isolated.sh BUILD_DIR "MPIEXEC" [ranks] [sizes] [reps]
# e.g. scripts/halo-cpu-isolated.sh build-openmpi mpiexec 2 "16 32 64" 5
set -uo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  echo 'usage: scripts/halo-cpu-isolated.sh BUILD_DIR "MPIEXEC" [RANKS] ["SIZES"] [REPS]'
  echo
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  echo "e.g. scripts/halo-cpu-isolated.sh build-openmpi mpiexec.openmpi 2 \"16 32 64\" 5"
  exit 0
fi
if [ $# -lt 2 ] || [[ $1 == -* ]]; then
  echo "halo-cpu-isolated.sh: ${1:+unknown option '$1' or }needs BUILD_DIR and MPIEXEC" >&2
  echo "Run 'scripts/halo-cpu-isolated.sh --help' for the usage." >&2
  exit 2
fi
build=$1; mpiexec=$2; ranks=${3:-2}; sizes=${4:-"16 32 64"}; reps=${5:-5}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for n in $sizes; do
  line="$ranks ranks ${n}^3:"
  for v in isend alltoallv alltoallw; do
    sys=(); dt=()
    for ((k = 0; k < reps; ++k)); do
      for who in system dtmpi; do
        name=$(printf "%-10s %s" "$v" "$who")
        t=$($mpiexec -n "$ranks" "$build/bench/dtmpi-bench" halo --size "$n" --iters 31 --only "$name" --no-limits 2>/dev/null |
            awk -v n="$name" 'index($0, n) == 1 {print $(NF-2)}')
        if [ "$who" = system ]; then sys+=("$t"); else dt+=("$t"); fi
      done
    done
    s=$(printf "%s\n" "${sys[@]}" | median); d=$(printf "%s\n" "${dt[@]}" | median)
    line+=$(awk -v v="$v" -v s="$s" -v d="$d" 'BEGIN {printf "  %s %.3f/%.3f ms %.2fx", v, s, d, s / d}')
  done
  echo "$line"
done
