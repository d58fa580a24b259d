#!/usr/bin/env bash
# The main demo of the README: installs what is missing, builds dtmpi against
# one MPI (Open MPI by default), and runs an unmodified MPI program that
# exchanges non-contiguous data (3D halo faces as subarray datatypes) on the
# plain system MPI and with libdtmpi preloaded: median times with their
# spread, the speedup, every halo cell checked; with a GPU, device buffers too.
# The report is also written to build-<mpi>/demo-results.txt.
set -euo pipefail
usage() {
  cat <<'EOF'
usage: scripts/demo.sh [--mpi openmpi|mpich] [--rounds R] [DEMO OPTIONS]

Installs the Debian packages dtmpi needs (scripts/install-deps.sh), builds dtmpi
against the MPI (scripts/build.sh; default openmpi) and runs the demo: an ordinary
MPI program (demo/halo_demo.c, 2 ranks) on the system MPI and with libdtmpi
preloaded, R rounds of both (default 3; scripts/run-demo.sh). Under a minute once
built. DEMO OPTIONS go to the program (build-openmpi/demo/dtmpi-demo --help).
The report is also written to build-<mpi>/demo-results.txt.
EOF
}
mpi=openmpi
rounds=3
demo_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --help | -h) usage; exit 0 ;;
    --mpi) mpi=${2:-}; shift 2 || true
      [[ $mpi == openmpi || $mpi == mpich ]] || { echo "demo.sh: --mpi openmpi or mpich" >&2; exit 2; } ;;
    --rounds) rounds=${2:-}; shift 2 || true ;;
    --size | --samples | --iters | --warmup | --case) demo_args+=("$1" "${2:-}"); shift 2 || true ;;
    *) echo "demo.sh: unknown option '$1'" >&2; echo "Run 'scripts/demo.sh --help' for the usage." >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "building dtmpi against $mpi (build-$mpi/, a few minutes the first time) ..."
log=$(mktemp)
scripts/build.sh "$mpi" >"$log" 2>&1 || { tail -40 "$log"; echo "demo.sh: the build failed (log: $log)" >&2; exit 1; }
rm -f "$log"
b=build-$mpi
gpu=()
[ -x "$b/demo/dtmpi-demo-gpu" ] && gpu=(--gpu "$b/demo/dtmpi-demo-gpu")
scripts/run-demo.sh --rounds "$rounds" "${gpu[@]}" --out "$b/demo-results.txt" \
  "$b/demo/dtmpi-demo" "$b/src/libdtmpi-$mpi.so" "$(command -v "mpiexec.$mpi")" 2 "${demo_args[@]}"
