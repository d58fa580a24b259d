#!/usr/bin/env bash
# Prints the structure figures issue 28 tracks: lines per layer, files over
# 500 lines, return-code checks written by hand instead of the check macros,
# the ways the system MPI is reached, DTMPI_* reads outside the configuration,
# and functions of transport/interpose that return a bare int code.
#   scripts/structure-metrics.sh [DIR]   (DIR: a source tree; default: this one)
# A raw check is a line comparing a code with MPI_SUCCESS / cudaSuccess /
# CUDA_SUCCESS outside src/base (where the check macros live) and outside the
# generated Fortran bindings (src/interpose/fortran/generate.py writes them;
# counted apart). A comparison that is no return-code check (a status's
# MPI_ERROR, a code kept for later) ends in `// rc-compare: why`; those are
# counted apart too, so each one stays visible.
set -euo pipefail
case ${1:-} in
  --help | -h) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
root=${1:-$(dirname "$0")/..}
cd "$root/src"
echo "lines per layer:"
for d in base type pack runtime transport topology interpose; do
  [ -d "$d" ] || continue
  printf '  %-10s %6d\n' "$d" "$(find "$d" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) -exec cat {} + | wc -l)"
done
for d in */; do
  d=${d%/}
  case " base type pack runtime transport topology interpose " in *" $d "*) continue ;; esac
  printf '  %-10s %6d\n' "$d" "$(find "$d" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) -exec cat {} + | wc -l)"
done
echo "files over 500 lines:"
find . -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \) -exec wc -l {} + | awk '$2 != "total" && $1 > 500 {printf "  %s %d\n", $2, $1}'
all_files=$(find . -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) ! -path './base/*')
generated=$(find ./interpose/fortran -name 'bindings_*.cpp' 2>/dev/null || true)
src_files=$(printf '%s\n' $all_files | grep -v '^./interpose/fortran/bindings_' || true)
count() { grep -E -c "$1" $src_files 2>/dev/null | awk -F: '{s += $2} END {print s + 0}'; }
count_checks() { grep -E -h "$2" $1 2>/dev/null | grep -v -c '// rc-compare:' || true; }
count_marked() { grep -E -h "$2" $1 2>/dev/null | grep -c '// rc-compare:' || true; }
mpi_rc='(!=|==) *MPI_SUCCESS'
cuda_rc='(!=|==) *(cudaSuccess|CUDA_SUCCESS)'
echo "raw MPI return-code checks (outside src/base): $(count_checks "$src_files" "$mpi_rc")"
echo "raw CUDA return-code checks (outside src/base): $(count_checks "$src_files" "$cuda_rc")"
echo "code comparisons that are no return-code check (// rc-compare:): $(count_marked "$src_files" "$mpi_rc|$cuda_rc")"
[ -n "$generated" ] && echo "raw MPI checks in the generated Fortran bindings: $(count_checks "$generated" "$mpi_rc")"
echo "system MPI reached by REAL(): $(count 'REAL\(') lines; by PMPI_: $(count 'PMPI_[A-Z][a-z_]*\(') lines"
echo "getenv outside runtime/config.cpp: $(grep -rl getenv . | grep -v -c '^./runtime/config.cpp$' || true)"
echo "int-returning functions in transport/ and interpose/ (definitions): $(grep -E -h '^(static )?int [a-z_][a-z_0-9]*\(|^int [A-Za-z_:]+\(' transport/*.cpp interpose/*.cpp 2>/dev/null | wc -l)"
