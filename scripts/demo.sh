#!/usr/bin/env bash
# The main demo of the README: installs what is missing, builds dtmpi against
# Open MPI, and runs an unmodified MPI program that exchanges non-contiguous
# data (3D halo faces as subarray datatypes) on the plain system MPI and with
# LD_PRELOAD=libdtmpi.so, printing both timings and whether the bytes agree.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh openmpi >/dev/null
scripts/run-demo.sh build-openmpi/demo/dtmpi-demo build-openmpi/src/libdtmpi.so \
  "$(command -v mpiexec.openmpi)" 2 "$@"
