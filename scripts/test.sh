#!/usr/bin/env bash
# The test command of the README (and of .ci/run): installs what is missing,
# builds dtmpi once per MPI (Open MPI, MPICH) plus a sanitizer build
# (ASan+UBSan, MPICH), and runs every test of each with CTest.
set -euo pipefail
case ${1:-} in
  "") ;;
  --help | -h)
    cat <<'EOF'
usage: scripts/test.sh

Installs the Debian packages dtmpi needs (scripts/install-deps.sh), builds it once
per MPI (scripts/build.sh) -- build-openmpi/ (optimized, with the CUDA code) and
build-mpich-asan/ (AddressSanitizer + UBSan, Debug, without the CUDA code) -- and
runs every test of each with CTest. Exits non-zero if any test failed. A single build:
scripts/build.sh openmpi && (cd build-openmpi && ctest -j2 --output-on-failure).
EOF
    exit 0 ;;
  *) echo "test.sh: unknown option '$1'" >&2; echo "Run 'scripts/test.sh --help' for the usage." >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
status=0
# one build per MPI: Open MPI's optimized (and the CUDA code compiled), MPICH's
# under the sanitizers (a plain MPICH build as well cost CI a third build and
# run, 15 of its 47 minutes, for what these two cover)
for cfg in "openmpi" "mpich asan"; do
  set -- $cfg
  dir=build-$1${2:+-$2}
  echo "=== $dir: build"
  scripts/build.sh "$@"
  echo "=== $dir: test"
  (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 900) || status=1
done
exit $status
