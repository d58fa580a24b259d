#!/usr/bin/env bash
# dtmpi-scope in CI (issue 24): a few iterations of every row; the rows that
# need no GPU (the host's memcpy, what dtmpi adds to an MPI call, pointer
# classification) must be measured, every GPU row must say it was skipped
# (not pass) where there is no GPU, the JSON, the summary and the plots must
# be written; --list, filters and Google Benchmark's own flags.
#   check-scope.sh DTMPI_SCOPE SOURCE_DIR MPIEXEC
set -uo pipefail
scope=$1 src=$2 mpiexec=$3
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DTMPI_CACHE_DIR=$tmp/cache

# everything, quickly: sizes up to 64 KiB, 2 repetitions of at least 1 ms
"$mpiexec" -n 1 "$scope" --quick --max-bytes 64K --benchmark_min_time=0.001 --benchmark_repetitions=2 \
  --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr" || { cat "$tmp/stdout" "$tmp/stderr"; fail "dtmpi-scope exits $?"; }
cat "$tmp/stdout"
test -s "$tmp/out/scope.json" || fail "no scope.json"
test -s "$tmp/out/scope-summary.txt" || fail "no scope-summary.txt"
grep -q "benchmarks:.*measured" "$tmp/out/scope-summary.txt" || fail "the summary has no totals"
grep -q "dtmpi-scope: .* benchmarks, .* s" "$tmp/stderr" || { cat "$tmp/stderr"; fail "no progress lines"; }
python3 - "$tmp/out/scope.json" <<'PY' || fail "the JSON does not hold what it should"
import json, sys
doc = json.load(open(sys.argv[1]))
ctx = doc["context"]
assert ctx.get("dtmpi_scope_format") == "1", "no dtmpi context"
runs = doc["benchmarks"]
def rows(prefix):
    return [b for b in runs if b["name"].startswith(prefix)]
# the CPU rows were measured: every host memcpy size, both MPI entry points, classification
medians = [b for b in rows("host/memcpy/local/") if b.get("aggregate_name") == "median"]
assert len(medians) == 9, f"host/memcpy/local: {len(medians)} sizes with a median (1 B..64 KiB in powers of 4: 9)"
assert all(b["bytes_per_second"] > 0 and not b.get("error_occurred") for b in medians), "memcpy without bandwidth"
for r in ("dtmpi/mpi-test-null/interposed", "dtmpi/mpi-test-null/system", "dtmpi/mpi-sendrecv-self-8B/interposed",
          "dtmpi/classify/heap", "dtmpi/classify/stack", "dtmpi/classify/mmap"):
    got = [b for b in rows(r) if b.get("aggregate_name") == "median"]
    assert got and got[0]["real_time"] > 0 and not got[0].get("error_occurred"), f"{r} not measured"
    assert any(b.get("aggregate_name") == n for b in rows(r) for n in ("min", "max", "spread")), f"{r}: no min/max/spread"
# without a GPU every GPU row is reported skipped, none passed or failed
gpu = [b for b in runs if not b["name"].startswith(("host/", "dtmpi/classify/stack", "dtmpi/classify/heap",
       "dtmpi/classify/static", "dtmpi/classify/mmap", "dtmpi/mpi-"))]
assert gpu, "no GPU rows reported at all"
if not ctx["dtmpi_gpus"].startswith("NVIDIA"):
    bad = [b["name"] for b in gpu if not (b.get("error_occurred") and b["error_message"].startswith("skipped: "))]
    assert not bad, f"GPU rows not skipped without a GPU: {bad[:5]}"
    names = {b["name"] for b in gpu}
    for r in ("pinned/h2d/gpu0", "naive/pinned/bidir/gpu0", "managed-demand/h2d/gpu0", "memcpy3dpeer/d2d/gpu0",
              "zerocopy/h2d/gpu0", "kernel-push/d2d/gpu0-gpu1", "cpu/launch/gpu0", "dtmpi/pack-launch/vector-1MiB-gpu0"):
        if r in names or ctx["dtmpi_gpus"].startswith("built without CUDA"):
            continue
        raise AssertionError(f"{r} not reported (as skipped)")
print(f"json: {len(runs)} entries, {len(gpu)} GPU entries skipped")
PY
grep -q "skipped: " "$tmp/stdout" || fail "no skipped line printed"
grep -q "what dtmpi adds" "$tmp/stdout" || fail "no dtmpi table"
grep -qE "dtmpi/mpi-test-null/interposed .*dtmpi adds" "$tmp/stdout" || fail "no interposed vs system line"
if ! grep -q NVIDIA "$tmp/out/scope.json"; then
  ls "$DTMPI_CACHE_DIR"/scope-*.json >/dev/null 2>&1 && fail "results left in the cache without GPU rows"
fi
# the figures (Debian's python3 with matplotlib, as the other plot scripts)
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 "$src/scripts/plot_scope.py" "$tmp/out/scope.json" "$tmp/out/scope" || fail "plot_scope.py"
  test -s "$tmp/out/scope-bandwidth.png" || fail "no bandwidth figure"
  test -s "$tmp/out/scope-cpu.png" || fail "no CPU-cost figure"
else
  echo "(plot_scope.py not run: /usr/bin/python3 has no matplotlib)"
fi

# --list: what a filter selects, nothing run (no MPI needed)
"$scope" --list --benchmark_filter='^host/' >"$tmp/list" || fail "--list exits $?"
grep -q "^host/memcpy/local/bytes:1/real_time$" "$tmp/list" || { cat "$tmp/list"; fail "--list"; }
grep -qv "^host/" "$tmp/list" && fail "--list ignores the filter"
# a filtered run needs no mpiexec when no dtmpi/mpi row is selected
"$scope" --quick --max-bytes 1K --benchmark_filter='^host/memcpy/local' --benchmark_min_time=0.001 \
  --out "$tmp/out2" >"$tmp/stdout2" 2>&1 || { cat "$tmp/stdout2"; fail "filtered run"; }
grep -q "MPI started" "$tmp/stdout2" && fail "MPI started for rows that do not need it"
[ "$(grep -cE '^host/memcpy/local +[0-9]+ (B|KiB) ' "$tmp/stdout2")" -eq 6 ] || { cat "$tmp/stdout2"; fail "6 sizes expected (1 B..1 KiB)"; }
# mistakes: Google Benchmark's unknown flags, bad values
out=$("$scope" --benchmark_nosuch=1 2>&1) && fail "--benchmark_nosuch=1 exits 0"
grep -q -- "--help" <<<"$out" || fail "--benchmark_nosuch does not say to run --help: $out"
"$scope" --gpu x >/dev/null 2>&1 && fail "--gpu x exits 0"
"$scope" --max-bytes 12Q >/dev/null 2>&1 && fail "--max-bytes 12Q exits 0"
echo "dtmpi-scope in CI: ok"
