#!/usr/bin/env bash
# Configures and builds dtmpi against one MPI into build-<mpi>[-asan]/.
#   scripts/build.sh openmpi|mpich [asan]
set -euo pipefail
cd "$(dirname "$0")/.."
mpi=${1:-openmpi}
san=${2:-}
dir=build-$mpi${san:+-$san}
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "$dir" "${gen[@]}" \
  -DMPI_C_COMPILER="mpicc.$mpi" -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.$mpi)" \
  -DDTMPI_SANITIZE=$([ "$san" = asan ] && echo ON || echo OFF) \
  -DCMAKE_BUILD_TYPE=$([ "$san" = asan ] && echo Debug || echo RelWithDebInfo) >/dev/null
cmake --build "$dir" -j "$(nproc)"
