#!/usr/bin/env bash
# What dtmpi adds to each rank's memory (issue 28): the plain MPI program
# dtmpi-memory-workload (halo exchange of subarray types, pack/unpack, a few
# collectives) run as it is and with libdtmpi preloaded, alternating, at each
# job size; per run the median over the ranks of the peak resident set
# (VmHWM), then the median over the repetitions; the same of the resident set
# after MPI_Init and of the anonymous (private) resident set at the end. Also
# dtmpi's own accounting of its structures (dtmpi_memory_bytes) now and scaled
# to 3072 ranks.
set -uo pipefail
usage() {
  cat <<'EOF'
usage: scripts/memory-per-rank.sh [--mpi openmpi|mpich|both] [--ranks "2 4 8 16 32 64"] [--size N]
                                  [--rounds K] [--reps R]

Runs build-<mpi>/bench/dtmpi-memory-workload under mpiexec.<mpi> plain and with
LD_PRELOAD=build-<mpi>/src/libdtmpi-<mpi>.so, alternating, R times per job size,
and prints per size: the median peak RSS (VmHWM) of a rank plain and with dtmpi,
their difference, the same for the resident set right after MPI_Init and for
the anonymous (private) resident set at the end, and the bytes of dtmpi's
structures (largest rank) now and scaled to 3072 ranks.
Defaults: --mpi openmpi, --ranks "2 4 8 16 32 64", --size 24, --rounds 5, --reps 3.
Build first: scripts/build.sh <mpi>.
EOF
}
mpis=openmpi ranks="2 4 8 16 32 64" size=24 rounds=5 reps=3
while [ $# -gt 0 ]; do
  case $1 in
    --help | -h) usage; exit 0 ;;
    --mpi) mpis=${2:?--mpi needs a value}; [ "$mpis" = both ] && mpis="openmpi mpich"; shift 2 ;;
    --ranks) ranks=${2:?--ranks needs a value}; shift 2 ;;
    --size) size=${2:?--size needs a value}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
    --reps) reps=${2:?--reps needs a value}; shift 2 ;;
    *) echo "memory-per-rank.sh: unknown option '$1'" >&2
       echo "Run 'scripts/memory-per-rank.sh --help' for the usage." >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
# the word after `key` (after the words `key` and `key2`) in a workload line
field() { awk -v k="$1" -v k2="${2:-}" '{for (i = 1; i < NF; ++i) if ($i == k && (k2 == "" || $(i+1) == k2)) {
  j = k2 == "" ? i + 1 : i + 2; gsub(/[;,]/, "", $j); print $j; exit}}'; }
status=0
for mpi in $mpis; do
  build=build-$mpi lib=$PWD/build-$mpi/src/libdtmpi-$mpi.so prog=build-$mpi/bench/dtmpi-memory-workload
  if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
    echo "memory-per-rank.sh: $prog or $lib missing: scripts/build.sh $mpi" >&2; exit 2
  fi
  echo "# $mpi: $(mpiexec.$mpi --version 2>&1 | grep -m1 -E "[0-9]+\.[0-9]+\.[0-9]+" | sed "s/^ *//")"
  printf "%-5s | %-26s | %-26s | %-26s | %s\n" "" "peak RSS (VmHWM) KiB" "RSS after MPI_Init KiB" \
    "anonymous RSS at end KiB" "dtmpi's structures B"
  printf "%-5s | %8s %8s %8s | %8s %8s %8s | %8s %8s %8s | %9s %12s\n" ranks plain dtmpi added plain dtmpi added \
    plain dtmpi added now "at 3072"
  for n in $ranks; do
    plain=() dt=() iplain=() idt=() aplain=() adt=() structs=() scaled=()
    for ((k = 0; k < reps; ++k)); do
      for who in plain dtmpi; do
        pre=()
        [ $who = dtmpi ] && pre=(env "LD_PRELOAD=$lib")
        line=$(mpiexec.$mpi -n "$n" "${pre[@]}" "$prog" --size "$size" --rounds "$rounds" 2>&1 | grep "^ranks ")
        if [ -z "$line" ] || ! grep -q "wrong regions 0" <<<"$line"; then
          echo "FAIL: $mpi $n ranks $who: ${line:-no result}" >&2; status=1; continue
        fi
        hwm=$(field median <<<"$line") init=$(field MPI_Init RSS <<<"$line") anon=$(field anon <<<"$line")
        if [ $who = plain ]; then plain+=("$hwm"); iplain+=("$init"); aplain+=("$anon")
        else dt+=("$hwm"); idt+=("$init"); adt+=("$anon"); structs+=("$(field structures max <<<"$line")")
             scaled+=("$(field 3072 ranks <<<"$line")")
        fi
      done
    done
    [ ${#plain[@]} -gt 0 ] && [ ${#dt[@]} -gt 0 ] || continue
    p=$(printf "%s\n" "${plain[@]}" | median) d=$(printf "%s\n" "${dt[@]}" | median)
    ip=$(printf "%s\n" "${iplain[@]}" | median) id=$(printf "%s\n" "${idt[@]}" | median)
    ap=$(printf "%s\n" "${aplain[@]}" | median) ad=$(printf "%s\n" "${adt[@]}" | median)
    s=$(printf "%s\n" "${structs[@]}" | median) x=$(printf "%s\n" "${scaled[@]}" | median)
    printf "%-5s | %8s %8s %8s | %8s %8s %8s | %8s %8s %8s | %9s %12s\n" "$n" "$p" "$d" "$((d - p))" "$ip" "$id" \
      "$((id - ip))" "$ap" "$ad" "$((ad - ap))" "$s" "$x"
  done
done
exit $status
