#!/usr/bin/env bash
# Runs the status-fidelity program (tests/mpi/status_fidelity.cpp) with dtmpi
# and fails unless every status it writes is the one the system MPI alone
# wrote in the plain run (issue 20).
#   check-status-fidelity.sh PLAIN_OUTPUT OUTPUT LAUNCH... (the program's
#   command line without its output file, which is appended)
set -euo pipefail
plain=$1 out=$2
shift 2
rm -f "$out"
"$@" "$out"
if ! cmp -s "$plain" "$out"; then
  echo "statuses differ from the system MPI's (<: without dtmpi, >: with dtmpi):"
  diff "$plain" "$out" | head -100
  exit 1
fi
echo "$(wc -l <"$out") statuses identical to the system MPI's"
