#!/usr/bin/env bash
# Every tool's command line (issue 25): `--help` prints a usage and exits 0,
# an unknown option exits non-zero with a message that says to run --help.
#   check-cli.sh BUILD_DIR SOURCE_DIR MPIEXEC
set -uo pipefail
build=$1 src=$2 mpiexec=$3
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# tool [args]: --help and --bogus
check() {
  local out err rc
  out=$("$@" --help 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "$* --help exits $rc"
  grep -q "usage" <<<"$out" || fail "$* --help prints no usage: $(head -3 <<<"$out")"
  err=$("$@" --bogus 2>&1 >/dev/null); rc=$?
  [ $rc -ne 0 ] || fail "$* --bogus exits 0"
  grep -q -- "--help" <<<"$err" || fail "$* --bogus does not say to run --help: $(head -3 <<<"$err")"
  [ $failed -eq 0 ] && echo "ok: $*"
}

check "$build/tools/dtmpi-info"
check "$build/tools/dtmpi-measure"
check "$build/tools/dtmpirun"
check "$build/bench/dtmpi-bench"
check "$build/bench/dtmpi-bench" halo
check "$build/demo/dtmpi-demo"
check "$build/bench/dtmpi-memory-workload"
[ -x "$build/demo/dtmpi-demo-gpu" ] && check "$build/demo/dtmpi-demo-gpu"
[ -x "$build/tools/dtmpi-scope" ] && check "$build/tools/dtmpi-scope"  # (built where Google Benchmark is)
for s in tools/trace_timeline.py scripts/plot_gpu_pack.py scripts/plot_gpu_pingpong.py scripts/plot_model.py scripts/plot_scope.py \
         scripts/demo_report.py scripts/run-demo.sh scripts/demo.sh scripts/test.sh scripts/build.sh \
         scripts/install-deps.sh scripts/gpu-check.sh scripts/halo-cpu-isolated.sh scripts/memory-per-rank.sh; do
  check "$src/$s"
done

# dtmpi-bench --help names every subcommand
help=$("$build/bench/dtmpi-bench" --help)
for c in pack latency pingpong model placement halo commit; do
  grep -qE "^  $c " <<<"$help" || fail "dtmpi-bench --help does not list $c"
done
# a subcommand dtmpi-bench does not have, a value missing, options that exclude each other
"$build/bench/dtmpi-bench" nosuch >/dev/null 2>&1 && fail "dtmpi-bench nosuch exits 0"
"$build/bench/dtmpi-bench" halo --size >/dev/null 2>&1 && fail "dtmpi-bench halo --size (no value) exits 0"
"$build/bench/dtmpi-bench" pingpong >/dev/null 2>&1 && fail "dtmpi-bench pingpong without --gpu exits 0"
"$build/tools/dtmpi-info" --explain --preload >/dev/null 2>&1 && fail "dtmpi-info --explain --preload exits 0"
"$build/demo/dtmpi-demo" --size 0 >/dev/null 2>&1 && fail "dtmpi-demo --size 0 exits 0"

# under mpiexec: --help on every rank, printed once, nothing measured
out=$("$mpiexec" -n 2 "$build/tools/dtmpi-measure" --help 2>&1); rc=$?
[ $rc -eq 0 ] || fail "mpiexec -n 2 dtmpi-measure --help exits $rc"
[ "$(grep -c '^usage:' <<<"$out")" -eq 1 ] || fail "mpiexec -n 2 dtmpi-measure --help prints the usage $(grep -c '^usage:' <<<"$out") times"
grep -q "ping-pong:" <<<"$out" && fail "mpiexec -n 2 dtmpi-measure --help measured"
out=$("$mpiexec" -n 2 "$build/tools/dtmpi-measure" --bogus 2>&1) && fail "mpiexec -n 2 dtmpi-measure --bogus exits 0"
[ "$(grep -c "unknown option '--bogus'" <<<"$out")" -eq 1 ] || fail "mpiexec -n 2 dtmpi-measure --bogus: $out"
out=$("$mpiexec" -n 2 "$build/bench/dtmpi-bench" --help 2>&1) || fail "mpiexec -n 2 dtmpi-bench --help fails"
[ "$(grep -c '^usage:' <<<"$out")" -eq 1 ] || fail "mpiexec -n 2 dtmpi-bench --help prints the usage $(grep -c '^usage:' <<<"$out") times"
[ $failed -eq 0 ] && echo "all tools: --help, unknown options, mpiexec: ok"
exit $failed
