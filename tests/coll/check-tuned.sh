#!/usr/bin/env bash
# DTMPI_COLL=tuned with dtmpi-tune's table (src/coll/tuning_table.hpp), 3 ranks:
#   1. dtmpi-tune --quick writes a table that parses (its cells on 2 and 3 ranks,
#      8 bytes, three operations: a barrier, a reduction, a data-moving one);
#   2. a hand-made table naming dtmpi's algorithms for every cell makes them serve
#      (dtmpi's counter of its own collectives > 0) and coll_differential's bytes
#      still equal the system MPI's;
#   3. the measured table of step 1 serves coll_differential too;
#   4. a table that is not one leaves "tuned" at the built-in choice, still correct;
#   5. Gatherv (ranks know their own blocks only: agreement first) is dtmpi's
#      under a table where the system MPI's wins only cost >= 50 agreements,
#      and stays the system MPI's under one where it wins a cheap size class
#      (coll_more_differential's CollV.Gatherv checks the bytes both times);
#   6. MPI_IN_PLACE is a dimension of the table: under one whose in-place entries
#      alone name dtmpi's algorithms (Allreduce, Allgather, Alltoall,
#      Reduce_scatter_block), dtmpi serves those calls in place and not the
#      others (coll_differential's Coll.InPlaceFormsMatchSystem checks the bytes
#      and counts both forms); the measured table of step 1 has in-place cells;
#      Reduce_scatter, whose in-place form is per rank, is not keyed by it: a
#      mixed call (Coll.ReduceScatterMixedInPlaceAndEmptyBlocks) must not hang
#      under an in-place entry naming dtmpi's algorithm.
#   check-tuned.sh MPIEXEC DTMPI-TUNE COLL_DIFFERENTIAL COLL_MORE_DIFFERENTIAL
set -u
mpiexec=$1 tune=$2 prog=$3 more=$4
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
# 5: the agreement's worth (the 8-byte allreduce entry: 1 us)
gatherv_table() {  # file, the system MPI's time where it wins
  cat >"$1" <<JSON
{"dtmpi_coll_table": 1, "library_version": "test", "host": "test", "mpi": "test",
 "entries": [
  {"op": "allreduce", "bytes": 8, "ranks": 3, "algorithm": "system", "us": 1.0, "system_us": 1.0},
  {"op": "gatherv", "bytes": 8, "ranks": 3, "algorithm": "flat", "us": 1.0, "system_us": 2.0},
  {"op": "gatherv", "bytes": 1048576, "ranks": 3, "algorithm": "system", "us": $2, "system_us": $2}]}
JSON
}
served_gatherv() {  # table, name: dtmpi's collectives counted over the run
  DTMPI_COLL=tuned DTMPI_COLL_TABLE=$1 DTMPI_STATS=1 DTMPI_LOG=info "$mpiexec" -n 3 "$more" \
    --gtest_filter='CollV.Gatherv*' >"$d/$2.out" 2>&1 || { tail -40 "$d/$2.out"; fail "CollV.Gatherv with the $2 table"; }
  grep -o "dtmpi's collective algorithms [0-9]*" "$d/$2.out" | awk '{s += $4} END {print s + 0}'
}
gatherv_table "$d/agree.json" 500
gatherv_table "$d/cheap.json" 10
agreed=$(served_gatherv "$d/agree.json" agree) || exit 1
cheap=$(served_gatherv "$d/cheap.json" cheap) || exit 1
[ "$agreed" -gt 0 ] || fail "Gatherv stayed the system MPI's where agreeing pays"
[ "$cheap" -eq 0 ] || fail "Gatherv was dtmpi's ($cheap) where an agreement before the system MPI's 10 us would not pay"
# 6: in place or not
grep -q '"in_place": true' "$d/measured.json" || fail "dtmpi-tune measured no in-place cell"
cat >"$d/in-place.json" <<'JSON'
{"dtmpi_coll_table": 1, "library_version": "test", "host": "test", "mpi": "test",
 "entries": [
  {"op": "allreduce", "bytes": 8, "ranks": 3, "in_place": false, "algorithm": "system"},
  {"op": "allreduce", "bytes": 8, "ranks": 3, "in_place": true, "algorithm": "recdbl"},
  {"op": "allgather", "bytes": 8, "ranks": 3, "in_place": false, "algorithm": "system"},
  {"op": "allgather", "bytes": 8, "ranks": 3, "in_place": true, "algorithm": "ring"},
  {"op": "alltoall", "bytes": 8, "ranks": 3, "in_place": false, "algorithm": "system"},
  {"op": "alltoall", "bytes": 8, "ranks": 3, "in_place": true, "algorithm": "pairwise"},
  {"op": "reduce_scatter_block", "bytes": 8, "ranks": 3, "in_place": false, "algorithm": "system"},
  {"op": "reduce_scatter_block", "bytes": 8, "ranks": 3, "in_place": true, "algorithm": "flat"},
  {"op": "reduce_scatter", "bytes": 8, "ranks": 3, "in_place": false, "algorithm": "system"},
  {"op": "reduce_scatter", "bytes": 8, "ranks": 3, "in_place": true, "algorithm": "flat"}]}
JSON
DTMPI_COLL=tuned DTMPI_COLL_TABLE=$d/in-place.json DTMPI_STATS=1 "$mpiexec" -n 3 "$prog" \
  --gtest_filter='Coll.InPlaceFormsMatchSystem:Coll.ReduceScatterMixedInPlaceAndEmptyBlocks' >"$d/in-place.out" 2>&1 \
  || { tail -40 "$d/in-place.out"; fail "Coll.InPlaceFormsMatchSystem with the in-place table"; }
line=$(grep -o "dtmpi served [0-9]* not in place, [0-9]* in place" "$d/in-place.out") || fail "no in-place count printed"
read -r _ _ not_in_place _ _ _ in_place _ <<<"$line"
[ "$in_place" -gt 0 ] || fail "in-place calls stayed the system MPI's under in-place entries naming dtmpi's ($line)"
[ "$not_in_place" -eq 0 ] || fail "calls not in place took the in-place entries ($line)"
echo "dtmpi-tune's table read and used: $served collectives served by dtmpi's algorithms under the forced table;" \
  "Gatherv agreed and served $agreed times where it pays, 0 where not;" \
  "in place: $in_place calls served, 0 of the others"
