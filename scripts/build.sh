#!/usr/bin/env bash
# Configures and builds dtmpi against one MPI into build-<mpi>[-asan]/
# (usage: scripts/build.sh --help).
set -euo pipefail
usage() {
  cat <<'EOF'
usage: scripts/build.sh [openmpi|mpich] [asan]

Configures (CMake, Ninja when installed) and builds dtmpi against one MPI into
build-<mpi>/ (Release; build-<mpi>-asan/ with AddressSanitizer and UBSan, Debug, without
the CUDA code: the plain builds compile it, and without a GPU the sanitizers
would only see it skip its tests). The
library is build-<mpi>/src/libdtmpi-<mpi>.so; the tools are in build-<mpi>/tools/.
Default: openmpi. Then: cd build-<mpi> && ctest -j2, or scripts/test.sh for all.
EOF
}
case ${1:-} in --help | -h) usage; exit 0 ;; esac
mpi=${1:-openmpi}
san=${2:-}
if [[ $mpi != openmpi && $mpi != mpich ]] || [[ -n $san && $san != asan ]] || [ $# -gt 2 ]; then
  echo "build.sh: unknown MPI or option: $*" >&2
  echo "Run 'scripts/build.sh --help' for the usage." >&2
  exit 2
fi
cd "$(dirname "$0")/.."
dir=build-$mpi${san:+-$san}
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "$dir" "${gen[@]}" \
  -DMPI_C_COMPILER="mpicc.$mpi" -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.$mpi)" \
  -DDTMPI_SANITIZE=$([ "$san" = asan ] && echo ON || echo OFF) \
  $([ "$san" = asan ] && echo -DDTMPI_CUDA=OFF) \
  -DCMAKE_BUILD_TYPE=$([ "$san" = asan ] && echo Debug || echo Release) >/dev/null
cmake --build "$dir" -j "$(nproc)"
