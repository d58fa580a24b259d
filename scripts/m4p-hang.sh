#!/usr/bin/env bash
# Diagnoses a hang of one mpi4py test module under dtmpi (GPU machine): runs
# it at NP ranks preloaded, with and without DTMPI_COLL=$COLL side by side,
# and after WAIT seconds dumps every rank's Python stack (faulthandler on
# SIGABRT) into $OUT/hang-{coll,plain}.txt.
#   scripts/m4p-hang.sh MPI4PY_TEST_DIR MODULE [NP] [WAIT]
set -u
case ${1:-} in --help | -h | "") echo "usage: COLL=<DTMPI_COLL> scripts/m4p-hang.sh MPI4PY_TEST_DIR MODULE [NP] [WAIT]"; exit 0 ;; esac
tests=$(cd "$1" && pwd); mod=$2; np=${3:-4}; wait_s=${4:-60}; out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=pt2pt
lib=$(ls "$PWD"/build-gpu/src/libdtmpi-*.so | head -1)
(cd "$tests" && mpiexec -n "$np" --oversubscribe -x LD_PRELOAD="$lib" -x PYTHONFAULTHANDLER=1 -x DTMPI_COLL="${COLL:-system}" \
  python3 main.py -v --no-numba -i "$mod" > "$out/hang-coll.txt" 2>&1) &
(cd "$tests" && mpiexec -n "$np" --oversubscribe -x LD_PRELOAD="$lib" -x PYTHONFAULTHANDLER=1 \
  python3 main.py -v --no-numba -i "$mod" > "$out/hang-plain.txt" 2>&1) &
sleep "$wait_s"
pkill -ABRT -f "main.py -v --no-numba -i $mod"
sleep 5
for f in coll plain; do echo "=== $f: $(grep -c ' ok$' "$out/hang-$f.txt") ok"; grep -E "^(FAIL|ERROR)|Error|File \".*(pkl5|test_)" "$out/hang-$f.txt" | head -30; done
