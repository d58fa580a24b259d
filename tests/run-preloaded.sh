#!/usr/bin/env bash
# Runs an unmodified binary with libdtmpi preloaded (with the sanitizer
# runtimes first when libdtmpi is a sanitizer build).
#   run-preloaded.sh LIBDTMPI BINARY [args...]
set -eu
lib=$1
shift
preload=$lib
if [ "${DTMPI_TEST_SANITIZE:-OFF}" = "ON" ]; then
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $lib"
fi
LD_PRELOAD="$preload" exec "$@"
