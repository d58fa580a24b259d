#!/usr/bin/env bash
# Runs tests/rma/rma_program with three seeds under dtmpi and requires the
# output the oracle gave: MPICH's own one-sided communication on host memory.
#   check-rma.sh MPIEXEC NRANKS LIBDTMPI PROGRAM host|dynamic|large|device|device-host
#   check-rma.sh --regen MPIEXEC.MPICH PROGRAM-BUILT-WITH-MPICH
# host:    dtmpi serves the host windows (DTMPI_RMA=all), preloaded
# dynamic: the same with MPI_Win_create_dynamic + MPI_Win_attach
# large:   host, every call in its MPI-4 large-count form (MPI_Put_c, ...,
#          MPI_Win_create_c); exits 77 where the MPI has none (Open MPI 4.1)
# device:  window memory and every origin/result buffer in GPU memory, with
#          dtmpi's default policy (DTMPI_RMA=auto); exits 77 without a GPU
# device-host: window memory in GPU memory, origin/result buffers in host
#          memory (accumulates: one kernel reading pinned staging)
# The oracle's output depends on no MPI (hashes of ints), so it is kept in
# tests/rma/expected/ and every build compares with it; under MPICH the
# plain program is run too and must still give it (else the program changed:
# --regen). Open MPI 4.1's own one-sided components cannot be the oracle: its
# default ones fail MPI_Win_create on these machines, and osc/pt2pt misplaces
# accumulates into types whose lb is not their true lb and hangs in some
# post/start/complete/wait rounds (docs/rma.md).
# Also requires dtmpi's counters to show that it served the window on every rank.
set -u
here=$(cd "$(dirname "$0")" && pwd)
seeds="11 12 13"
if [ "${1:-}" = --regen ]; then
  for n in 2 3 4; do for s in $seeds; do
    "$2" -n $n "$3" --seed $s --rounds 6 | grep '^round' | sort >"$here/expected/np$n-seed$s.txt" || exit 1
  done; done
  exit 0
fi
mpiexec=$1 n=$2 lib=$3 prog=$4 mode=$5
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=()
[ "$mode" = dynamic ] && args=(--dynamic)
[ "$mode" = large ] && args=(--large-count)
[ "$mode" = device-host ] && args=(--host-buffers)
mpich=0
"$mpiexec" --version 2>&1 | grep -qi "hydra\|mpich" && mpich=1
for seed in $seeds; do
  expected="$here/expected/np$n-seed$seed.txt"
  if [ $mpich -eq 1 ]; then
    "$mpiexec" -n "$n" "$prog" --seed $seed --rounds 6 "${args[@]}" >"$out/plain" 2>&1 || { cat "$out/plain"; exit 1; }
    if ! diff "$expected" <(grep '^round' "$out/plain" | sort); then
      echo "seed $seed: MPICH's own RMA no longer gives $expected: the program changed? (check-rma.sh --regen)"; exit 1
    fi
  fi
  if [ "${mode%-host}" = device ]; then
    DTMPI_STATS=1 "$mpiexec" -n "$n" "$here/../run-preloaded.sh" "$lib" "$prog" --seed $seed --rounds 6 --device \
      "${args[@]}" >"$out/dtmpi" 2>"$out/dtmpi-err"
  else
    DTMPI_RMA=all DTMPI_STATS=1 "$mpiexec" -n "$n" "$here/../run-preloaded.sh" "$lib" "$prog" --seed $seed \
      --rounds 6 "${args[@]}" >"$out/dtmpi" 2>"$out/dtmpi-err"
  fi
  rc=$?
  if [ $rc -eq 77 ] || grep -q "skipped" "$out/dtmpi"; then grep -m1 "skipped" "$out/dtmpi"; exit 77; fi
  if [ $rc -ne 0 ]; then
    echo "the program failed under dtmpi (seed $seed, exit $rc):"; cat "$out/dtmpi-err" "$out/dtmpi"; exit 1
  fi
  if ! diff "$expected" <(grep '^round' "$out/dtmpi" | sort); then
    echo "seed $seed: dtmpi's results differ from the oracle's (< oracle, > dtmpi)"; exit 1
  fi
  # every rank served the window and operations were issued; on host
  # windows targets applied them (on device windows of one node every
  # operation may go directly over CUDA IPC). Counted with -o: the ranks'
  # stderr lines may interleave.
  served=$(grep -o 'RMA windows 1, operations' "$out/dtmpi-err" | wc -l)
  ops=$(grep -o 'operations [0-9]*' "$out/dtmpi-err" | awk '{s += $2} END {print s + 0}')
  applied=$(grep -o 'applied as target [0-9]*' "$out/dtmpi-err" | awk '{s += $4} END {print s + 0}')
  if [ "${mode%-host}" != device ] && [ "$applied" -eq 0 ]; then ops=0; fi
  if [ "$served" -ne "$n" ] || [ "$ops" -eq 0 ]; then
    echo "seed $seed: dtmpi did not serve the window on every rank:"; grep -i 'rma' "$out/dtmpi-err"; exit 1
  fi
  direct=$(grep -o '([0-9]* direct over CUDA IPC' "$out/dtmpi-err" | tr -dc '0-9\n' | awk '{s += $1} END {print s + 0}')
  layout=$(grep -o '[0-9]* layout to layout)' "$out/dtmpi-err" | tr -dc '0-9\n' | awk '{s += $1} END {print s + 0}')
  layout_all=$((${layout_all:-0} + layout))
  echo "seed $seed: $(wc -l <"$expected") result lines as the oracle's, served by dtmpi on $n ranks ($direct operations direct over CUDA IPC, $layout of them by one layout-to-layout kernel)"
done
# device windows of one node, every rank mapping every other: some put or get
# between two non-contiguous layouts went by the one kernel (the random types
# make such pairs in every seed set; none would mean the path is never tested);
# with host buffers, the accumulates' kernels reading pinned staging count
if [ "${mode%-host}" = device ] && [ -z "${DTMPI_TEST_REFUSE_IPC:-}" ] && [ -z "${DTMPI_RANKS_PER_NODE:-}" ] &&
   [ -z "${DTMPI_TEST_TWO_KERNEL_MOVE:-}" ] && [ "$layout_all" -eq 0 ]; then
  echo "no put or get went by the layout-to-layout kernel: the path is untested"; exit 1
fi
