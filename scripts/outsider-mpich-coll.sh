#!/usr/bin/env bash
# MPICH's own collective tests (test/mpi/coll of MPICH v4.0.2) as an outside
# client of dtmpi's collective algorithms (src/coll, DTMPI_COLL), on Open MPI.
# Run scripts/outsider-mpich-coll.sh --help for the usage.
set -u

S1='barrier:knomial4,bcast:flat,allreduce:knomial4,reduce:knomial8,allgather:ring,gather:binomial,scatter:binomial,alltoall:pairwise,reduce_scatter_block:flat,scan:recdbl,exscan:recdbl'
S2='barrier:flat,bcast:binomial,allreduce:rsag,reduce:flat,allgather:recdbl,gather:flat,scatter:flat,alltoall:flat,scan:linear,exscan:linear'
S3='barrier:dissemination,allreduce:recdbl,reduce:binomial,allreduce:tree'
# session 18's operations and algorithms: the v forms, Reduce_scatter, the chain
# Bcast, the K-nomial Gather/Scatter
S4='allgatherv:ring,gatherv:flat,scatterv:flat,alltoallv:pairwise,reduce_scatter:flat,bcast:chain,gather:knomial4,scatter:knomial8'
S5='allgatherv:recdbl,alltoallv:flat,gather:knomial8,scatter:knomial4,reduce_scatter:flat'
# session 21's algorithms: the K-ary trees, the K-nomial Bcast, the chain
# Allreduce, Bruck's Alltoall (radix 2 and 4)
S6='barrier:kary4,bcast:kary2,allreduce:chain,reduce:kary8,gather:kary4,scatter:kary2,alltoall:bruck'
S7='barrier:kary8,bcast:knomial4,allreduce:kary4,reduce:kary2,gather:kary2,scatter:kary8,alltoall:bruck4'
# session 23: the node-aggregated all-to-alls, over emulated nodes of 2 ranks
# (DTMPI_RANKS_PER_NODE=2 as well)
S8='alltoall:pairwise,alltoallv:pairwise'

usage() {
  cat <<EOF
usage: scripts/outsider-mpich-coll.sh [--help] LIB OUT_DIR

Runs MPICH's collective test programs (test/mpi/coll/testlist of MPICH v4.0.2)
once on the system Open MPI alone ("plain") and once per DTMPI_COLL setting with
LIB preloaded, and lists the runs that pass plain but not under dtmpi.

  LIB      dtmpi's library built for Open MPI, e.g.
           build-openmpi/src/libdtmpi-openmpi.so (preloaded with LD_PRELOAD)
  OUT_DIR  created if missing; receives src/ (the extracted test/mpi), bin/
           (the built programs), lib/ (the copy of LIB the runs preload), logs/<prog>.np<N>[.args].<config>.log (the
           output of each run, last line "rc=<exit status>"), build.log,
           not-built.txt and results.txt (the lines printed below)

Steps:
  1. extract test/mpi from MPICH's git mirror (tag v4.0.2, else HEAD) into
     OUT_DIR/src and write the two headers its configure would have made
     (mpitestconf.h: USE_STRICT_MPI, long long / long double / complex types,
     no threads, no GPU; mtest_mpix.h: empty)
  2. build util/mtest.c, mtest_common.c, mtest_single.c, dtypes.c, dtpools/src
     (libdtpools.a: dtpoolsconf.h written, MPI_Type_hvector/hindexed mapped to
     their MPI_Type_create_ forms, which Open MPI 4.1 keeps) and every
     program named in coll/testlist with mpicc.openmpi (-DUSE_MTEST_NBC and the
     source file for the nb* variants, from coll/Makefile.am); programs that do
     not compile or link (MPI-4 features such as persistent collectives or
     large counts, MPIX) are listed as "NOTBUILT <prog> <reason class>";
     @largetest@ entries are skipped
  3. run each testlist entry at min(its rank count, NP_MAX) ranks (entries that
     become identical after the cap run once), with
       plain  timeout T mpiexec.openmpi --oversubscribe -n N ./prog args
       S1..S7  the same with -x LD_PRELOAD=LIB -x DTMPI_COLL=<setting>
     S1 = $S1
     S2 = $S2
     S3 = $S3
     S4 = $S4
     S5 = $S5
     S6 = $S6
     S7 = $S7
     A run PASSes when its output contains " No Errors" and it exits with 0;
     TIMEOUT when it ran past T seconds (exit 124/137); NOLOAD when ld.so
     could not preload LIB (counted as not passing); else FAIL. LIB is copied
     to OUT_DIR/lib first and the copy is preloaded, so a rebuild of LIB while
     this runs does not reach the runs.
     One line per run: "<PASS|FAIL|TIMEOUT|NOLOAD> <config> <prog> np=<N> [args] rc=<rc> <s>s
     [coll=<k>]"
  4. a summary: "pass plain N/M, pass S1 N/M, ...", and "pass plain but fail
     under dtmpi:" with one "<config> <prog> np=<N> [args] <verdict>" a line

Environment (optional):
  MPICH_GIT   the MPICH bare git dir (default: found below /work/.mirror/pmodels+mpich)
  MPICH_TAG   the tag or commit to extract (default v4.0.2 where present, else HEAD)
  NP_MAX      the most ranks of one run (default 4)
  T           the time limit of one run in seconds (default 60)
  CONFIGS     which configurations run (default "plain S1 S2 S3"; S4 to S8 on request; S8:
              Alltoall(v/w) node-aggregated over emulated nodes of 2 ranks)
  ONLY        a space-separated list of program names; only those run
  S23_ALL     default 1: S2, S3, S6 and S7 run on every program; 0: only on programs whose
              source calls an operation those settings name (barrier, bcast,
              allreduce, reduce, allgather, gather, scatter, alltoall, scan, exscan)
  STATS       default 1: the dtmpi runs also get -x DTMPI_STATS=1, and each line
              shows "coll=<k>", rank 0's count of calls dtmpi's own algorithms
              served (0: the program never reached them); 0: not set
Open MPI runs as root here: OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1 are exported.
Exit status: 0 when no run passes plain and fails under dtmpi, 1 otherwise, 2 on
a usage error.
EOF
}
case ${1:-} in --help | -h) usage; exit 0 ;; esac
if [ $# -ne 2 ]; then usage >&2; exit 2; fi
lib=$(readlink -f "$1") || { echo "no library $1" >&2; exit 2; }
[ -f "$lib" ] || { echo "no library $1" >&2; exit 2; }
mkdir -p "$2" || exit 2
out=$(cd "$2" && pwd)
STATS=${STATS:-1} NP_MAX=${NP_MAX:-4} T=${T:-60} CONFIGS=${CONFIGS:-plain S1 S2 S3} ONLY=${ONLY:-} S23_ALL=${S23_ALL:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CC=mpicc.openmpi MPIEXEC=mpiexec.openmpi

# --- 0. a snapshot of the library (a rebuild of LIB during the runs must not
# change or truncate what the runs preload) -------------------------------------
mkdir -p "$out/lib"
for try in 1 2 3 4 5 6; do
  cp "$lib" "$out/lib/" && snap=$out/lib/$(basename "$lib") &&
    ! LD_PRELOAD="$snap" /bin/true 2>&1 | grep -q 'cannot be preloaded' && break
  snap=; echo "library $lib not loadable now (being rebuilt?), retrying in 20 s" >&2; sleep 20
done
[ -n "$snap" ] || { echo "library $lib cannot be preloaded" >&2; exit 2; }
echo "library: $lib ($(stat -c '%y' "$lib" | cut -c1-19), md5 $(md5sum < "$snap" | cut -c1-12)), preloaded from the copy $snap"
lib=$snap

# --- 1. extract -------------------------------------------------------------
git_dir=${MPICH_GIT:-$(dirname "$(find /work/.mirror/pmodels+mpich -maxdepth 2 -name HEAD | head -1)")}
[ -d "$git_dir" ] || { echo "no MPICH git dir ($git_dir)" >&2; exit 2; }
if [ -z "${MPICH_TAG:-}" ]; then
  if git --git-dir="$git_dir" rev-parse -q --verify v4.0.2 > /dev/null; then MPICH_TAG=v4.0.2; else MPICH_TAG=HEAD; fi
fi
rm -rf "$out/src" "$out/bin" "$out/logs"; mkdir -p "$out/src" "$out/bin" "$out/logs"
git --git-dir="$git_dir" archive "$MPICH_TAG" test/mpi | tar -x -C "$out/src" || exit 2
t=$out/src/test/mpi
echo "MPICH $MPICH_TAG ($(git --git-dir="$git_dir" rev-parse --short "$MPICH_TAG")) test/mpi in $t"
cat > "$t/include/mpitestconf.h" <<'EOF'
/* hand-written for Open MPI 4.1 (no configure run) */
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_LONG_DOUBLE 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define MTEST_HAVE_MIN_FPRINTF 1
#define USE_STRICT_MPI 1
#define POINTERINT_t long
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
EOF
printf '#ifndef MTEST_MPIX_H_INCLUDED\n#define MTEST_MPIX_H_INCLUDED\n#endif\n' > "$t/include/mtest_mpix.h"
printf '#define HAVE_STDLIB_H 1\n#define HAVE_STRING_H 1\n#define HAVE_STDINT_H 1\n#define HAVE_LIMITS_H 1\n#define HAVE_STRDUP 1\n#define HAVE_MEMSET 1\n' > "$t/dtpools/dtpoolsconf.h"
# Open MPI 4.1 removed the MPI-1 MPI_Type_hvector/hindexed that dtpools_custom.c calls
printf '#include <mpi.h>\n#undef MPI_Type_hvector\n#define MPI_Type_hvector MPI_Type_create_hvector\n#undef MPI_Type_hindexed\n#define MPI_Type_hindexed MPI_Type_create_hindexed\n#include "dtpools_custom.c"\n' > "$t/dtpools/src/dtpools_custom_ompi.c"

# --- 2. build ---------------------------------------------------------------
blog=$out/build.log; : > "$blog"; : > "$out/not-built.txt"
cflags=(-O1 -g -w -I"$t/include" -I"$t/dtpools/include")
for u in mtest mtest_common mtest_single dtypes; do
  $CC "${cflags[@]}" -c "$t/util/$u.c" -o "$out/bin/$u.o" >> "$blog" 2>&1 || { echo "util/$u.c does not build (see $blog)" >&2; exit 2; }
done
for u in dtpools dtpools_misc dtpools_init_verify dtpools_desc dtpools_attr dtpools_custom_ompi; do
  $CC "${cflags[@]}" -I"$t/dtpools/src" -c "$t/dtpools/src/$u.c" -o "$out/bin/$u.o" >> "$blog" 2>&1 || { echo "dtpools/src/$u.c does not build (see $blog)" >&2; exit 2; }
done
ar rcs "$out/bin/libdtpools.a" "$out"/bin/dtpools*.o
utilo=("$out/bin/mtest.o" "$out/bin/mtest_common.o" "$out/bin/mtest_single.o" "$out/bin/dtypes.o" "$out/bin/libdtpools.a")
cd "$t/coll" || exit 2
mk=Makefile.am
var() { # program, automake variable suffix: the value from coll/Makefile.am
  sed -n "s/^$1_$2 *= *//p" "$mk" | sed 's/\$(AM_CPPFLAGS)//; s/\$(LDADD)//'
}
reason() { # a compiler log: the class of the failure
  if grep -qE 'MPI_[A-Za-z_]*_init\b|MPI_Start|persistent' "$1"; then echo "MPI-4 persistent collectives"
  elif grep -qE '_c\b|MPI_Count|large count' "$1"; then echo "MPI-4 large count"
  elif grep -qE 'MPIX_' "$1"; then echo "MPIX"
  elif grep -qiE 'undeclared|implicit declaration|undefined reference' "$1"; then
    echo "not in Open MPI 4.1: $(grep -oE "'MPIX?_[A-Za-z_]+'|undefined reference to .[A-Za-z_]+" "$1" | sort -u | head -3 | tr '\n' ' ')"
  else echo "compile error"; fi
}
entries=()
declare -A built=()
while read -r prog np rest; do
  case $prog in '' | '#'*) continue ;; esac
  [[ $prog == @* ]] && { echo "NOTBUILT ${prog##*@} (testlist marks it ${prog%@*}@: skipped)" | tee -a "$out/not-built.txt"; continue; }
  [ -n "$ONLY" ] && [[ " $ONLY " != *" $prog "* ]] && continue
  if [ -z "${built[$prog]:-}" ]; then
    src=$(var "$prog" SOURCES); [ -n "$src" ] || src=$prog.c
    cpp=$(var "$prog" CPPFLAGS); ldadd=$(var "$prog" LDADD)
    echo "== $prog: $src $cpp $ldadd" >> "$blog"
    # shellcheck disable=SC2086
    if $CC "${cflags[@]}" $cpp $src "${utilo[@]}" $ldadd -lm -o "$out/bin/$prog" > "$out/bin/.cc.log" 2>&1; then
      built[$prog]=yes
    else
      built[$prog]=no
      echo "NOTBUILT $prog ($(reason "$out/bin/.cc.log"))" | tee -a "$out/not-built.txt"
    fi
    cat "$out/bin/.cc.log" >> "$blog"
  fi
  [ "${built[$prog]}" = yes ] || continue
  [ "$np" -gt "$NP_MAX" ] && np=$NP_MAX
  args=() envs=()
  for kv in $rest; do
    case $kv in
      arg=*) args+=("${kv#arg=}") ;;
      env=*) envs+=(-x "${kv#env=}") ;;
    esac
  done
  e="$prog|$np|${args[*]:-}|${envs[*]:-}"
  [[ " ${entries[*]:-} " == *" ${e// /^} "* ]] || entries+=("${e// /^}")
done < testlist.in
rm -f "$out/bin/.cc.log"
nbuilt=0; for p in "${!built[@]}"; do [ "${built[$p]}" = yes ] && nbuilt=$((nbuilt + 1)); done
echo "built ${nbuilt} of ${#built[@]} programs; ${#entries[@]} runs per configuration"

# --- 3. run -------------------------------------------------------------------
s23_ops='MPI_I?(Barrier|Bcast|Allreduce|Reduce|Allgather|Gather|Scatter|Alltoall|Scan|Exscan|Reduce_scatter)v?\b'
declare -A npass=() nrun=() plainok=()
bad=()
: > "$out/results.txt"
for cfg in $CONFIGS; do
  case $cfg in
    plain) pre=() ;;
    S1) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S1") ;;
    S2) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S2") ;;
    S3) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S3") ;;
    S4) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S4") ;;
    S5) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S5") ;;
    S6) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S6") ;;
    S7) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S7") ;;
    S8) pre=(-x LD_PRELOAD="$lib" -x DTMPI_COLL="$S8" -x DTMPI_RANKS_PER_NODE=2) ;;
    *) echo "unknown configuration $cfg" >&2; exit 2 ;;
  esac
  [ "$cfg" != plain ] && [ "$STATS" = 1 ] && pre+=(-x DTMPI_STATS=1)
  npass[$cfg]=0 nrun[$cfg]=0
  for e in "${entries[@]}"; do
    e=${e//^/ }
    IFS='|' read -r prog np a x <<< "$e"
    src=$(var "$prog" SOURCES); [ -n "$src" ] || src=$prog.c
    if [ "$S23_ALL" != 1 ] && { [ "$cfg" = S2 ] || [ "$cfg" = S3 ] || [ "$cfg" = S6 ] || [ "$cfg" = S7 ]; } && ! grep -qE "$s23_ops" $src; then continue; fi
    tag=$prog.np$np; [ -n "$a" ] && tag+=.$(echo "$a" | tr -c 'A-Za-z0-9=\n' _)
    log=$out/logs/$tag.$cfg.log
    t0=$SECONDS
    # shellcheck disable=SC2086
    timeout -k 5 "$T" $MPIEXEC --oversubscribe -n "$np" "${pre[@]}" $x "$out/bin/$prog" $a > "$log" 2>&1 < /dev/null
    rc=$?
    echo "rc=$rc" >> "$log"
    if [ "$cfg" != plain ] && grep -q 'cannot be preloaded' "$log"; then v=NOLOAD
    elif [ $rc = 124 ] || [ $rc = 137 ]; then v=TIMEOUT
    elif [ $rc = 0 ] && grep -q ' No Errors' "$log"; then v=PASS
    else v=FAIL; fi
    nrun[$cfg]=$((nrun[$cfg] + 1))
    [ $v = PASS ] && npass[$cfg]=$((npass[$cfg] + 1))
    [ "$cfg" = plain ] && [ $v = PASS ] && plainok[$e]=1
    [ "$cfg" != plain ] && [ $v != PASS ] && [ -n "${plainok[$e]:-}" ] && bad+=("$cfg $prog np=$np${a:+ $a} $v")
    k=; [ "$cfg" != plain ] && [ "$STATS" = 1 ] && k=coll=$(sed -n "s/^\[dtmpi stats rank 0\].*dtmpi's collective algorithms \([0-9]*\).*/\1/p" "$log" | head -1)
    [ "$k" = coll= ] && k=coll=?
    printf '%-7s %-5s %-18s np=%s %-14s rc=%-3s %3ss %s\n' $v "$cfg" "$prog" "$np" "$a" $rc $((SECONDS - t0)) "$k" | tee -a "$out/results.txt"
  done
done

# --- 4. summary -------------------------------------------------------------
{
  echo "--- summary (MPICH $MPICH_TAG coll, ranks capped at $NP_MAX, $T s a run)"
  echo "not built: $(wc -l < "$out/not-built.txt") programs (not-built.txt)"
  line=
  for cfg in $CONFIGS; do line+="pass $cfg ${npass[$cfg]}/${nrun[$cfg]}, "; done
  echo "${line%, }"
  echo "pass plain but fail under dtmpi: ${#bad[@]}"
  for b in "${bad[@]}"; do echo "  $b"; done
} | tee -a "$out/results.txt"
[ ${#bad[@]} -eq 0 ]
