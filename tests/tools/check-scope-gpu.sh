#!/usr/bin/env bash
# dtmpi-scope's GPU rows on a GPU machine (issue 24): every row up to 1 MiB,
# a few iterations; none may fail (a wrong byte, a CUDA error, a busy-wait
# start that never holds); the rows a single GPU cannot run are skipped with
# their reason; the transfer rows have bandwidths, the bidirectional ones the
# busy-wait's counters. Exits 77 (CTest: skipped) without a GPU.
#   check-scope-gpu.sh DTMPI_SCOPE SOURCE_DIR MPIEXEC
set -uo pipefail
scope=$1 src=$2 mpiexec=$3
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DTMPI_CACHE_DIR=$tmp/cache
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
# (into a file: grep -q stopping early would kill the lister with SIGPIPE,
# which pipefail reports as a failure)
"$scope" --list >"$tmp/list" 2>&1
grep -q "^pinned/h2d/gpu0/" "$tmp/list" || { echo "no GPU rows (no GPU or no CUDA build): skipped"; exit 77; }
"$mpiexec" -n 1 "$scope" --quick --max-bytes 1M --benchmark_min_time=0.002 --benchmark_repetitions=2 \
  --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
cat "$tmp/stdout"
grep -E "FAILED|error:" "$tmp/stdout" && fail "rows failed"
[ $rc -eq 0 ] || { cat "$tmp/stderr"; fail "dtmpi-scope exits $rc"; }
python3 - "$tmp/out/scope.json" <<'PY' || fail "the JSON does not hold what it should"
import json, sys
doc = json.load(open(sys.argv[1]))
runs = doc["benchmarks"]
med = {b["run_name"]: b for b in runs if b.get("aggregate_name") == "median"}
def bw(row):  # at the largest size measured (the strided rows stop at a half / a quarter of it)
    got = sorted((int(n.split("/bytes:")[1].split("/")[0]), b) for n, b in med.items() if n.startswith(row + "/bytes:"))
    assert got, f"{row}: no median"
    return got[-1][1]["bytes_per_second"] / 1e9
for row in ("pinned/h2d/gpu0", "pinned/d2h/gpu0", "pinned/bidir/gpu0", "naive/pinned/h2d/gpu0", "pageable/h2d/gpu0",
            "device/d2d/gpu0", "zerocopy/h2d/gpu0", "kernel/d2d/gpu0", "memcpy2d/d2h/gpu0", "memcpy3d/h2d/gpu0",
            "memcpy3dpeer/d2d/gpu0"):
    assert bw(row) > 0.1, f"{row}: {bw(row)} GB/s at its largest size"
bidir = [b for n, b in med.items() if n.startswith("pinned/bidir/gpu0/")]
assert all("restarts" in b for b in bidir), "bidirectional rows without the busy-wait counters"
skipped = {b["error_message"] for b in runs if b.get("error_occurred")}
assert all(m.startswith("skipped: ") for m in skipped), skipped
print(f"{len(med)} rows measured; skipped: {sorted(skipped)}")
print(f"pinned h2d at 1 MiB: {bw('pinned/h2d/gpu0'):.1f} GB/s, naive {bw('naive/pinned/h2d/gpu0'):.1f} GB/s")
PY
ls "$DTMPI_CACHE_DIR"/scope-*.json >/dev/null 2>&1 && fail "left in the cache though the rows stop at 1 MiB (dtmpi-measure needs 64 MiB)"
echo "dtmpi-scope on the GPU: ok"
