#!/usr/bin/env bash
# Runs the unmodified demo program (demo/halo_demo.c) on the plain system MPI
# and with libdtmpi preloaded, alternately over several rounds (this kind of
# machine drifts; alternation gives both the same conditions), and prints per
# case the median time per exchange with its spread and the speedup; fails
# unless every halo cell arrived right and both runs received the same bytes.
# With a GPU build of the demo and a GPU, also the block in GPU memory.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/run-demo.sh [--rounds R] [--gpu DEMO_GPU] [--out FILE] DEMO LIBDTMPI MPIEXEC [NP] [DEMO ARGS...]

Runs DEMO (build-<mpi>/demo/dtmpi-demo) with NP ranks (default 2) through MPIEXEC,
plain and with LD_PRELOAD=LIBDTMPI, R rounds (default 3) of both in alternating
order, and prints the median time per exchange of each case, its spread (the
25th-75th percentile of all samples) and the speedup (with its range over the
rounds). DEMO ARGS go to the demo (dtmpi-demo --help: --size, --samples, ...).

options:
  --rounds R       rounds of plain + dtmpi runs (default 3)
  --gpu DEMO_GPU   also run the GPU build of the demo (build-<mpi>/demo/dtmpi-demo-gpu):
                   device pointers through the system MPI, then through dtmpi;
                   skipped with a message where no GPU is visible
  --out FILE       also write the report to FILE
  --help           this help

scripts/demo.sh builds everything and calls this with the right paths.
EOF
}

rounds=3 gpu_demo="" out=""
while [ $# -gt 0 ]; do
  case $1 in
    --help | -h) usage; exit 0 ;;
    --rounds) rounds=$2; shift 2 ;;
    --gpu) gpu_demo=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -*) echo "run-demo.sh: unknown option '$1'" >&2; echo "Run 'scripts/run-demo.sh --help' for the usage." >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 3 ]; then
  echo "run-demo.sh: needs DEMO LIBDTMPI MPIEXEC" >&2
  echo "Run 'scripts/run-demo.sh --help' for the usage." >&2
  exit 2
fi
demo=$1 lib=$2 mpiexec=$3 np=${4:-2}
shift 3
[ $# -gt 0 ] && shift
here=$(cd "$(dirname "$0")" && pwd)

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
preload=$lib
if [ "${DTMPI_TEST_SANITIZE:-OFF}" = "ON" ]; then
  # a sanitized libdtmpi needs the ASan runtime loaded first
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $lib"
  export ASAN_OPTIONS=detect_leaks=0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plain() { "$mpiexec" -n "$np" "$@"; }
with() { "$mpiexec" -n "$np" env LD_PRELOAD="$preload" "$@"; }
for ((r = 1; r <= rounds; ++r)); do
  # alternate which goes first: a machine that speeds up or slows down over a
  # run favours neither
  if ((r % 2)); then order="plain with"; else order="with plain"; fi
  for v in $order; do
    $v "$demo" "$@" >"$tmp/$v.$r" || { echo "demo failed ($v, round $r):"; cat "$tmp/$v.$r"; exit 1; }
  done
done

report=("$here/demo_report.py" "$tmp")
status=0

gpu_note=""
if [ -n "$gpu_demo" ]; then
  # dtmpi first: it tells whether there is a GPU at all (exit 77: none)
  set +e
  timeout 300 "$mpiexec" -n "$np" env LD_PRELOAD="$preload" "$gpu_demo" "$@" >"$tmp/gpu-with.1" 2>"$tmp/gpu-with.err"
  rc=$?
  set -e
  if [ $rc -eq 77 ] || grep -q "^# skipped" "$tmp/gpu-with.1"; then
    gpu_note="skipped: no GPU visible here (the GPU section needs a CUDA build and a GPU)"
    rm -f "$tmp/gpu-with.1"
  else
    [ $rc -eq 0 ] || { echo "GPU demo with dtmpi failed (exit $rc):"; tail -20 "$tmp/gpu-with.err"; status=1; }
    # the system MPI: device pointers (a crash where it is not CUDA-aware), and
    # what a program must do instead, the block copied through the host
    set +e
    timeout 120 "$mpiexec" -n "$np" "$gpu_demo" "$@" --case sendrecv >"$tmp/gpu-plain.1" 2>"$tmp/gpu-plain.err"
    prc=$?
    timeout 120 "$mpiexec" -n "$np" "$gpu_demo" "$@" --case hoststaged >"$tmp/gpu-staged.1" 2>"$tmp/gpu-staged.err"
    src=$?
    set -e
    [ $src -eq 0 ] || { echo "GPU demo on the system MPI, copied through the host, failed (exit $src):"; tail -20 "$tmp/gpu-staged.err"; status=1; }
    report+=(--gpu-plain-exit "$prc")
  fi
fi
[ -n "$gpu_note" ] && report+=(--gpu-note "$gpu_note")

if [ -n "$out" ]; then
  python3 "${report[@]}" | tee "$out" || status=1
else
  python3 "${report[@]}" || status=1
fi
exit $status
