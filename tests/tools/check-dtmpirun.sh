#!/usr/bin/env bash
# dtmpirun picks the libdtmpi of the program's MPI (issue 25): a C program,
# a Python program through mpi4py, a Fortran program, a launcher-only guess;
# and the preloaded library really serves the program's MPI calls.
#   check-dtmpirun.sh BUILD_DIR MPIEXEC
# BUILD_DIR's dtmpirun; its dtmpi-demo is the C program.
set -uo pipefail
build=$1 mpiexec=$2 cprog=$1/demo/dtmpi-demo
run=$build/tools/dtmpirun
fl=$(basename "$(ls "$build"/src/libdtmpi-*.so | head -1)" .so | sed 's/^libdtmpi-//')
lib=$(cd "$build/src" && pwd -P)/libdtmpi-$fl.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
expect() {  # what command...: the command's output names $lib
  local what=$1 out
  shift
  out=$("$@" 2>&1) || { fail "$what: $* exits non-zero: $out"; return; }
  grep -q "$lib" <<<"$out" && echo "ok: $what" || fail "$what: $out"
}

expect "C program" "$run" --print "$mpiexec" -n 2 "$cprog"
expect "C program, --preload" "$run" --preload "$cprog"
expect "launcher options before the program" "$run" --print "$mpiexec" -n 2 --host localhost:2 "$cprog" a b
expect "no launcher" "$run" --print "$cprog"
expect "--mpi" "$run" --print --mpi "$fl" /bin/true
expect "a program without MPI: the launcher's" "$run" --print "$mpiexec" -n 2 /bin/true
# the right library really serves the calls (its counters at MPI_Finalize)
out=$(DTMPI_STATS=1 "$run" "$mpiexec" -n 2 "$cprog" --case zfaces --samples 1 --iters 1 --warmup 0 2>&1)
grep -q "dtmpi stats rank 1.*staged sends [1-9]" <<<"$out" && echo "ok: C program served by dtmpi" || fail "C run: $out"
"$run" --bogus >/dev/null 2>&1 && fail "--bogus accepted"
"$run" >/dev/null 2>&1 && fail "no program accepted"

# Python through mpi4py (Debian's python3-mpi4py is built with Open MPI)
py=/usr/bin/python3
if [ "$fl" = openmpi ] && "$py" -c "import mpi4py" 2>/dev/null; then
  cat >"$tmp/app.py" <<'PY'
import ctypes
from mpi4py import MPI
active = ctypes.CDLL(None).dtmpi_active()  # the preloaded libdtmpi's own symbol
comm = MPI.COMM_WORLD
assert comm.allreduce(active) == comm.Get_size(), "dtmpi not active in every rank"
if comm.Get_rank() == 0:
    print("python: dtmpi active in", comm.Get_size(), "ranks")
PY
  expect "python3 app.py" "$run" --print "$mpiexec" -n 2 "$py" "$tmp/app.py"
  printf '#!%s\n' "$py" | cat - "$tmp/app.py" >"$tmp/script.py" && chmod +x "$tmp/script.py"
  expect "a python script with a #! line" "$run" --print "$mpiexec" -n 2 "$tmp/script.py"
  out=$("$run" "$mpiexec" -n 2 "$py" "$tmp/app.py" 2>&1) && grep -q "dtmpi active in 2" <<<"$out" &&
    echo "ok: mpi4py program runs with dtmpi active" || fail "mpi4py run: $out"
else
  echo "skipped: python (no mpi4py for $py built with this MPI)"
fi

# Fortran: MPICH's bindings call the C MPI_* functions (dtmpi serves them);
# Open MPI's call PMPI_*, in front of which dtmpi has its own Fortran entry
# points (docs/fortran.md): either way MPI_PACK from Fortran is served, and
# dtmpirun no longer says the calls bypass dtmpi
fc=$(command -v "mpif90.$fl" || true)
if [ -n "$fc" ] && ! command -v gfortran >/dev/null; then
  # the MPI's wrapper without the compiler it wraps (the GPU machine's Ubuntu image)
  echo "skipped: Fortran (mpif90.$fl is there, gfortran is not)"
elif [ -n "$fc" ]; then
  cat >"$tmp/f.f90" <<'F90'
program f
  use mpi
  implicit none
  integer :: ierr, vec, pos, i
  integer :: src(12), out(4)
  call MPI_Init(ierr)
  call MPI_Type_vector(4, 1, 3, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  src = (/ (i, i = 0, 11) /)
  pos = 0
  call MPI_Pack(src, 1, vec, out, 16, pos, MPI_COMM_WORLD, ierr)
  if (out(2) /= 3 .or. out(4) /= 9) stop 1
  call MPI_Type_free(vec, ierr)
  call MPI_Finalize(ierr)
end program
F90
  "$fc" "$tmp/f.f90" -o "$tmp/f" || fail "mpif90"
  expect "Fortran program" "$run" --print "$mpiexec" -n 1 "$tmp/f"
  out=$(DTMPI_STATS=1 "$run" "$mpiexec" -n 1 "$tmp/f" 2>&1) || fail "Fortran run: $out"
  grep -q "MPI_Pack 1," <<<"$out" && echo "ok: Fortran MPI_PACK served by dtmpi" || fail "Fortran not served: $out"
  grep -q "types planned 1," <<<"$out" && echo "ok: Fortran MPI_TYPE_COMMIT seen by dtmpi" || fail "Fortran commit not seen: $out"
  grep -q "serves none" <<<"$out" && fail "dtmpirun still says Fortran bypasses dtmpi: $out"
else
  echo "skipped: Fortran (no mpif90.$fl)"
fi
exit $failed
