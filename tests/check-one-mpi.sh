#!/usr/bin/env bash
# Every binary of one build loads one MPI: the flavour it was built for, never
# the other one too (Debian installs both MPIs in one directory, and a library
# looked up by several names once pulled Open MPI's Fortran binding, and with
# it libmpi.so.40, into the MPICH build's dtmpi-bench).
#   check-one-mpi.sh FLAVOUR(openmpi|mpich) BUILD_DIR
# (every ELF executable and shared library under BUILD_DIR)
set -u
flavour=$1 dir=$2
case $flavour in
  openmpi) other='lib(mpich(fort|cxx)?|mpicxx|mpifort)\.so|libmpi\.so\.12' ;;
  mpich) other='lib(mpi|mpi_mpifh|mpi_cxx|open-pal|open-rte)\.so\.40' ;;
  *) echo "check-one-mpi.sh: unknown flavour $flavour"; exit 2 ;;
esac
status=0 checked=0
while IFS= read -r -d '' b; do
  [ "$(head -c 4 "$b" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  checked=$((checked + 1))
  if bad=$(ldd "$b" 2>/dev/null | grep -E "$other"); then
    echo "FAIL: $b ($flavour build) loads another MPI:"; echo "$bad"; status=1
  fi
done < <(find "$dir" -type f \( -perm -u+x -o -name '*.so*' \) -not -path '*/CMakeFiles/*' -print0)
echo "$checked binaries of the $flavour build checked"
[ $checked -gt 0 ] || { echo "FAIL: no binary found under $dir"; status=1; }
exit $status
