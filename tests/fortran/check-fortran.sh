#!/usr/bin/env bash
# A Fortran program built with the MPI's own mpif90, run on 2 ranks plain and
# with libdtmpi preloaded (DTMPI_STATS=1): both runs must succeed and print the
# same results, and dtmpi's counters must show it served the calls (its
# MPI_Init/MPI_Finalize, types planned, and what the program's kind names).
#   check-fortran.sh FLAVOUR LIBDTMPI MPIEXEC SOURCE BINDING [program args...]
# BINDING: mpi (use mpi), mpif_h (include 'mpif.h'), f08 (use mpi_f08).
# Exits 77 (CTest: skipped) without mpif90.FLAVOUR, gfortran, or (f08) the
# MPI's mpi_f08 module.
set -uo pipefail
flavour=$1 lib=$2 mpiexec=$3 src=$4 binding=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
fc=$(command -v "mpif90.$flavour" || true)
if [ -z "$fc" ]; then echo "skipped: no mpif90.$flavour"; exit 77; fi
if ! command -v gfortran >/dev/null; then echo "skipped: mpif90.$flavour has no gfortran behind it"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
flags=(-O1 -ffree-line-length-none)
case $binding in
  mpi) ;;
  mpif_h) flags+=(-DDTMPI_MPIF_H -fallow-argument-mismatch) ;;  # no interfaces: gfortran >= 10 needs it
  f08)
    printf 'program p\n  use mpi_f08\nend program\n' >probe.f90
    if ! "$fc" probe.f90 -o probe >/dev/null 2>&1; then echo "skipped: $fc has no mpi_f08 module"; exit 77; fi
    flags+=(-DDTMPI_F08) ;;
  *) echo "unknown binding $binding"; exit 2 ;;
esac
"$fc" "${flags[@]}" "$src" -o prog || { echo "FAIL: $fc ${flags[*]} $src"; exit 1; }
run() { timeout 240 "$mpiexec" -n 2 "$@" ./prog "${args[@]}"; }
case $(basename "$src") in
  rma*)
    # dtmpi serves every window (the host test mode, docs/rma.md); Open MPI
    # 4.1's default one-sided components fail MPI_Win_create on these
    # machines, osc/pt2pt works for the plain run (no MPI_THREAD_MULTIPLE here)
    export DTMPI_RMA=all OMPI_MCA_osc=pt2pt ;;
esac
args=("$@")
plain=$(run 2>&1) || { echo "FAIL: plain run: $plain"; exit 1; }
served=$(DTMPI_STATS=1 run "$here/../run-preloaded.sh" "$lib" 2>&1) || { echo "FAIL: preloaded run: $served"; exit 1; }
# the program's own lines (timings aside) must be identical; 'note:' lines
# say where the MPI's own binding departs from the standard (calls_f08.f90:
# MPICH 4.0.2's f08 Waitany/Testany/Waitsome/Testsome indices), which dtmpi's entry
# points must not
results() { grep -v -e '^\[dtmpi' -e '^time per' -e '^note:' <<<"$1"; }
if grep -q '^note:' <<<"$served"; then
  echo "FAIL: preloaded run: $(grep '^note:' <<<"$served")"
  exit 1
fi
grep '^note:' <<<"$plain" | sed 's/^note:/note (plain MPI only):/'
if [ "$(results "$plain")" != "$(results "$served")" ]; then
  echo "FAIL: results differ"
  diff <(results "$plain") <(results "$served")
  exit 1
fi
results "$plain"
failed=0
stats=$(grep '^\[dtmpi stats rank [0-9]*\] types' <<<"$served")
[ "$(wc -l <<<"$stats")" -eq 2 ] || { echo "FAIL: not 2 ranks' counters (MPI_Init/MPI_Finalize not served?): $served"; exit 1; }
expect=("types planned [1-9]" "staged sends [1-9]")
case $(basename "$src") in
  # (not "applied as target": operations that go straight into a mapped window are not)
  rma*) expect=("RMA windows 1," "operations [1-9]") ;;
  exchange*) expect+=("MPI_Pack [1-9]" "MPI_Unpack [1-9]" "persistent starts [1-9]" "staged collectives [1-9]") ;;
esac
for e in "${expect[@]}"; do
  n=$(grep -c "$e" <<<"$stats")
  [ "$n" -eq 2 ] && echo "ok: both ranks: $e" || { echo "FAIL: $n rank(s) with '$e'"; failed=1; }
done
[ $failed -eq 0 ] || echo "$stats"
exit $failed
