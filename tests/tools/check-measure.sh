#!/usr/bin/env bash
# dtmpi-measure on a fresh account (issue 25): the cache directory does not
# exist (DTMPI_CACHE_DIR names a nested path that is not there; then HOME
# without ~/.cache), the model must still be written; the progress, piped
# here, comes as plain lines (no \r redraws).
#   check-measure.sh CACHE_DIR MPIEXEC NP_FLAG DTMPI_MEASURE
# CACHE_DIR is removed first and holds the model afterwards (for test_model_measured).
set -uo pipefail
dir=$1
shift
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$dir"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
DTMPI_CACHE_DIR=$dir "$@" --quick >"$logs/out" 2>"$logs/err" || { cat "$logs/out" "$logs/err"; fail "dtmpi-measure --quick"; }
ls "$dir"/model-*.json >/dev/null 2>&1 || fail "no model written into $dir (DTMPI_CACHE_DIR did not exist)"
grep -q $'\r' "$logs/err" && fail "progress redrawn with \\r into a pipe"
grep -q "host MPI ping-pong: .* points" "$logs/err" || { cat "$logs/err"; fail "no plain progress lines"; }
echo "DTMPI_CACHE_DIR=$dir (did not exist): $(ls "$dir"/model-*.json)"
cat "$logs/err"
# a home without ~/.cache, no XDG_CACHE_HOME: ~/.cache/dtmpi is made
home=$logs/home
rm -rf "$home"
mkdir -p "$home"
env -u DTMPI_CACHE_DIR -u XDG_CACHE_HOME HOME=$home "$@" --quick >/dev/null 2>&1 || fail "dtmpi-measure with a fresh HOME"
ls "$home"/.cache/dtmpi/model-*.json >/dev/null 2>&1 || fail "no model in a fresh HOME's ~/.cache/dtmpi"
echo "HOME=$home (no ~/.cache): $(ls "$home"/.cache/dtmpi/model-*.json)"
# a cache path that cannot be made fails at once, before measuring, and says why
out=$(DTMPI_CACHE_DIR=/proc/dtmpi-no "$@" --quick 2>&1) && fail "dtmpi-measure into /proc succeeded"
grep -q "cannot create" <<<"$out" || fail "no reason given: $out"
grep -q "ping-pong:" <<<"$out" && fail "measured before finding the cache directory unusable"
echo "cache directory creation: ok"
