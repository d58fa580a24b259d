#!/usr/bin/env bash
# Installs a build tree into a temporary prefix and checks what a user meets:
#   check-install.sh BUILD_DIR MPI_C_COMPILER
#       the installed layout, a consumer built with find_package(dtmpi) and with
#       pkg-config (run), the installed tools through their launcher scripts
#   check-install.sh BUILD_DIR MPI_C_COMPILER --refuse OTHER_MPI_C_COMPILER
#       a consumer of the other MPI is refused at configure time with a message
#       that names both MPIs and what to do (exit 77: no other MPI here)
#   check-install.sh BUILD_DIR MPI_C_COMPILER --side-by-side OTHER_BUILD_DIR OTHER_MPI_C_COMPILER
#       both flavours installed in one prefix: each MPI's consumer gets its own
#       libdtmpi, the tools and dtmpirun pick by the program's MPI (exit 77: the
#       other build is not there)
set -euo pipefail
build=$1 mpicc=$2
mode=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*"; exit 1; }
# a build's MPI flavour, from its library's name (build-<mpi>/src/libdtmpi-<flavour>.so)
flavour_of() { basename "$(ls "$1"/src/libdtmpi-*.so 2>/dev/null | head -1)" .so | sed 's/^libdtmpi-//'; }
fl=$(flavour_of "$build")

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"

consumer() {  # name mpicc: configure and build the CMake consumer, or fail with its log
  cmake -S "$here/consumer" -B "$tmp/$1" -DCMAKE_PREFIX_PATH="$prefix" -DMPI_C_COMPILER="$2" \
    >"$tmp/$1.log" 2>&1 || return 1
  cmake --build "$tmp/$1" >>"$tmp/$1.log" 2>&1
}

case $mode in
"")
  test -f "$prefix/include/dtmpi/dtmpi.h" || fail "no header"
  lib=$(ls "$prefix"/lib*/libdtmpi-"$fl".so) || fail "no libdtmpi-$fl.so"
  lib=$(cd "$(dirname "$lib")" && pwd -P)/libdtmpi-$fl.so
  for t in dtmpirun dtmpi-info dtmpi-measure dtmpi-bench; do test -x "$prefix/bin/$t" || fail "no bin/$t"; done
  for t in dtmpi-info dtmpi-measure dtmpi-bench; do
    test -x "$prefix/libexec/dtmpi/$fl/$t" || fail "no libexec/dtmpi/$fl/$t"
  done
  ls "$prefix"/lib*/cmake/dtmpi/dtmpi-"$fl"-targets.cmake >/dev/null || fail "no dtmpi-$fl-targets.cmake"
  consumer consumer "$mpicc" || { cat "$tmp/consumer.log"; fail "consumer with find_package(dtmpi)"; }
  "$tmp/consumer/consumer"
  grep -q "libdtmpi-$fl" <(ldd "$tmp/consumer/consumer") || fail "consumer not linked to libdtmpi-$fl"
  pcdir=$(dirname "$(ls "$prefix"/lib*/pkgconfig/dtmpi-"$fl".pc)")
  [ "$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=mpi_flavour "dtmpi-$fl")" = "$fl" ] || fail "pc mpi_flavour"
  flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs "dtmpi-$fl")
  "$mpicc" "$here/consumer/consumer.c" $flags -Wl,-rpath,"$(dirname "$lib")" -o "$tmp/consumer-pc"
  "$tmp/consumer-pc"
  # the installed tools, through bin/ (the script that picks the build)
  # (outputs captured first: grep -q closing a pipe early fails the pipeline under pipefail)
  out=$("$prefix/bin/dtmpi-info" --help) && grep -q "usage: dtmpi-info" <<<"$out" || fail "bin/dtmpi-info --help"
  out=$("$prefix/bin/dtmpi-info") && grep -q "built against *: $fl" <<<"$out" ||
    fail "bin/dtmpi-info does not run the $fl build: $out"
  [ "$("$prefix/bin/dtmpi-info" --preload)" = "LD_PRELOAD=$lib" ] || fail "dtmpi-info --preload"
  out=$("$prefix/bin/dtmpirun" --print mpiexec -n 2 "$tmp/consumer-pc") && grep -q "LD_PRELOAD=$lib" <<<"$out" ||
    fail "dtmpirun --print: $out"
  echo "install ($fl), find_package(dtmpi), pkg-config dtmpi-$fl, installed tools: ok"
  ;;
--refuse)
  other=${4:-}
  command -v "$other" >/dev/null || { echo "skipped: no $other here"; exit 77; }
  if consumer refused "$other"; then
    cat "$tmp/refused.log"
    fail "a consumer built with $other was given the $fl build of dtmpi"
  fi
  for want in "was built against" "libdtmpi-$fl" "MPI_C_COMPILER=" "install dtmpi built with this MPI"; do
    grep -q "$want" "$tmp/refused.log" || { cat "$tmp/refused.log"; fail "the refusal does not say \"$want\""; }
  done
  sed -n '/Reason given by package/,/^$/p' "$tmp/refused.log" | head -14
  # pkg-config cannot look at the consumer's MPI: the package's name and its
  # mpi_flavour variable say which MPI it is for, and the other MPI's is not there
  pcdir=$(dirname "$(ls "$prefix"/lib*/pkgconfig/dtmpi-"$fl".pc)")
  [ "$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=mpi_flavour "dtmpi-$fl")" = "$fl" ] || fail "pc mpi_flavour"
  ! ls "$pcdir"/dtmpi-*.pc | grep -v "dtmpi-$fl.pc" || fail "another flavour's .pc installed"
  echo "a consumer of $other is refused the $fl build: ok"
  ;;
--side-by-side)
  other_build=$4 other_mpicc=$5
  ofl=$(flavour_of "$other_build" 2>/dev/null || true)
  if [ -z "$ofl" ] || ! ls "$other_build"/src/libdtmpi-"$ofl".so >/dev/null 2>&1 || ! command -v "$other_mpicc" >/dev/null; then
    echo "skipped: no built $other_build to install beside this one"
    exit 77
  fi
  cmake --install "$other_build" --prefix "$prefix" >>"$tmp/install.log"
  consumer mine "$mpicc" || { cat "$tmp/mine.log"; fail "$fl consumer after installing $ofl beside"; }
  consumer theirs "$other_mpicc" || { cat "$tmp/theirs.log"; fail "$ofl consumer"; }
  grep -q "libdtmpi-$fl" <(ldd "$tmp/mine/consumer") || fail "the $fl consumer does not use libdtmpi-$fl"
  grep -q "libdtmpi-$ofl" <(ldd "$tmp/theirs/consumer") || fail "the $ofl consumer does not use libdtmpi-$ofl"
  "$tmp/mine/consumer"
  "$tmp/theirs/consumer"
  for pair in "$fl:$tmp/mine/consumer" "$ofl:$tmp/theirs/consumer"; do
    "$prefix/bin/dtmpirun" --print "${pair#*:}" | grep -q "libdtmpi-${pair%%:*}.so" ||
      fail "dtmpirun does not preload libdtmpi-${pair%%:*} into ${pair#*:}"
  done
  echo "$fl and $ofl side by side in one prefix: ok"
  ;;
*) fail "unknown mode $mode" ;;
esac
