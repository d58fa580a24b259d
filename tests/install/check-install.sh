#!/usr/bin/env bash
# Installs a build tree into a temporary prefix and builds a small consumer
# against it twice: with find_package(dtmpi) and with pkg-config. Then runs the
# consumer and checks the installed tools start.
#   check-install.sh BUILD_DIR MPI_C_COMPILER
set -euo pipefail
build=$1 mpicc=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
test -f "$tmp/prefix/include/dtmpi/dtmpi.h"
test -x "$tmp/prefix/bin/dtmpi-info"
ls "$tmp/prefix"/lib*/libdtmpi.so* > /dev/null
cmake -S "$here/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DMPI_C_COMPILER="$mpicc" > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer"
pcdir=$(dirname "$(ls "$tmp/prefix"/lib*/pkgconfig/dtmpi.pc)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dtmpi)
"$mpicc" "$here/consumer/consumer.c" $flags -Wl,-rpath,"$(dirname "$(ls "$tmp/prefix"/lib*/libdtmpi.so | head -1)")" -o "$tmp/consumer-pc"
"$tmp/consumer-pc"
echo "install, find_package(dtmpi) and pkg-config: ok"
