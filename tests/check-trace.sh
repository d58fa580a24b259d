#!/usr/bin/env bash
# DTMPI_TRACE end to end: runs the given MPI command with tracing on, then
# checks that every rank wrote its file and that tools/trace_timeline.py
# merges them into a timeline holding both ends of multi-message transfers
# (a descriptor posted, its landing at the receiver, the answer back).
#   check-trace.sh NRANKS COMMAND...
set -eu
nranks=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
DTMPI_TRACE="$dir/trace" "$@"
for ((r = 0; r < nranks; ++r)); do
  [ -s "$dir/trace.$r.txt" ] || { echo "rank $r wrote no trace"; exit 1; }
done
steps=$(python3 "$(dirname "$0")/../tools/trace_timeline.py" "$dir/trace")
for want in "send: descriptor posted" "recv: landed" "send: ack received"; do
  grep -q "$want" <<<"$steps" || { echo "no \"$want\" in the merged timeline:"; echo "$steps" | head -40; exit 1; }
done
echo "trace OK: $(wc -l < "$dir/trace.0.txt") points on rank 0, $(grep -c . <<<"$steps") steps"
