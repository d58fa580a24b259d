#!/usr/bin/env bash
# The test command of the README (and of .ci/run): installs what is missing,
# builds dtmpi once per MPI (Open MPI, MPICH) plus a sanitizer build
# (ASan+UBSan, MPICH), and runs every test of each with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
status=0
for cfg in "openmpi" "mpich" "mpich asan"; do
  set -- $cfg
  dir=build-$1${2:+-$2}
  echo "=== $dir: build"
  scripts/build.sh "$@"
  echo "=== $dir: test"
  (cd "$dir" && ctest -j "$jobs" --output-on-failure --timeout 900) || status=1
done
exit $status
