#!/usr/bin/env bash
# Installs the Debian packages dtmpi needs to build and test (as root, or
# through sudo), skipping the package index update when nothing is missing.
set -euo pipefail
case ${1:-} in
  "") ;;
  --help | -h)
    cat <<'EOF'
usage: scripts/install-deps.sh

Installs, with apt-get (as root, or through sudo), the Debian packages dtmpi needs
to build, test, run its demo and plot its results: compilers, CMake, Ninja,
GoogleTest, Google Benchmark (dtmpi-scope), Open MPI, MPICH, METIS, libnuma
(dtmpi-scope's NUMA rows), gfortran (the Fortran launch test), Debian's python3
with matplotlib (scripts/plot_*.py) and mpi4py (the Python launch test).
Does nothing when everything is installed.
EOF
    exit 0 ;;
  *) echo "install-deps.sh: unknown option '$1'" >&2; echo "Run 'scripts/install-deps.sh --help' for the usage." >&2; exit 2 ;;
esac
# python3-matplotlib and python3-mpi4py belong to Debian's /usr/bin/python3
# (the plot scripts' interpreter); another python3 on PATH needs its own
pkgs=(build-essential cmake ninja-build pkg-config libgtest-dev libbenchmark-dev libnuma1 gfortran
      openmpi-bin libopenmpi-dev mpich libmpich-dev libmetis-dev python3
      python3-matplotlib python3-mpi4py)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
