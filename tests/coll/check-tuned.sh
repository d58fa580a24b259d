#!/usr/bin/env bash
# DTMPI_COLL=tuned with dtmpi-tune's table (src/coll/tuning_table.hpp), 3 ranks:
#   1. dtmpi-tune --quick writes a table that parses (its cells on 2 and 3 ranks,
#      8 bytes, three operations: a barrier, a reduction, a data-moving one);
#   2. a hand-made table naming dtmpi's algorithms for every cell makes them serve
#      (dtmpi's counter of its own collectives > 0) and coll_differential's bytes
#      still equal the system MPI's;
#   3. the measured table of step 1 serves coll_differential too;
#   4. a table that is not one leaves "tuned" at the built-in choice, still correct.
#   check-tuned.sh MPIEXEC DTMPI-TUNE COLL_DIFFERENTIAL
set -u
mpiexec=$1 tune=$2 prog=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$mpiexec" -n 3 "$tune" --quick --blocking-only --max-bytes 8 --ops barrier,allreduce,allgather --time-limit 30 --out "$d/measured.json" >"$d/tune.out" 2>&1 \
  || { cat "$d/tune.out"; fail "dtmpi-tune failed"; }
grep -q '"dtmpi_coll_table": 1' "$d/measured.json" || fail "dtmpi-tune wrote no table"
grep -q '"ranks": 3' "$d/measured.json" || fail "no cell on 3 ranks"
grep -q 'LogGP' "$d/tune.out" || fail "no LogGP parameters reported"
cat >"$d/forced.json" <<'JSON'
{"dtmpi_coll_table": 1, "library_version": "test", "host": "test", "mpi": "test",
 "entries": [
  {"op": "barrier", "bytes": 0, "ranks": 3, "algorithm": "flat"},
  {"op": "bcast", "bytes": 8, "ranks": 3, "algorithm": "binomial"},
  {"op": "allreduce", "bytes": 8, "ranks": 3, "algorithm": "rsag"},
  {"op": "allreduce", "bytes": 1048576, "ranks": 3, "algorithm": "tree"},
  {"op": "reduce", "bytes": 8, "ranks": 3, "algorithm": "flat"}]}
JSON
run() {  # table, name
  DTMPI_COLL=tuned DTMPI_COLL_TABLE=$1 DTMPI_STATS=1 DTMPI_LOG=info "$mpiexec" -n 3 "$prog" >"$d/$2.out" 2>&1 \
    || { tail -40 "$d/$2.out"; fail "coll_differential with the $2 table"; }
}
run "$d/forced.json" forced
grep -q "DTMPI_COLL=tuned: 5 entries from $d/forced.json" "$d/forced.out" || { grep -i tuned "$d/forced.out"; fail "the forced table was not read"; }
served=$(grep -o "dtmpi's collective algorithms [0-9]*" "$d/forced.out" | awk '{s += $4} END {print s + 0}')
[ "$served" -gt 0 ] || fail "a table naming dtmpi's algorithms did not make them serve"
run "$d/measured.json" measured
grep -q "DTMPI_COLL=tuned: [0-9]* entries from" "$d/measured.out" || fail "the measured table was not read"
echo '{"dtmpi_coll_table": 7}' >"$d/bad.json"
run "$d/bad.json" bad
grep -q "DTMPI_COLL=tuned: .*the built-in choice" "$d/bad.out" || fail "a bad table was not refused"
echo "dtmpi-tune's table read and used: $served collectives served by dtmpi's algorithms under the forced table"
