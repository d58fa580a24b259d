#!/usr/bin/env bash
# Issue 22 asks for dtmpi's collectives timed against Open MPI *and* MPICH on
# 2-16 ranks; the GPU machines (16 cores) have only Open MPI and no network to
# install another. This script, run on the Debian VM, makes a folder that the
# device tool carries there: Debian's MPICH 4.0.2 runtime (libmpich, its UCX
# transports, hwloc, and Hydra's mpiexec with its proxy) and dtmpi-tune and
# dtmpi-bench built against it without the CUDA code (they link dtmpi's core
# statically). `scripts/gpu-check.sh coll-mpich` runs the collective suite
# with it.
set -euo pipefail
case ${1:-} in
  --help | -h)
    cat <<'EOF'
usage: scripts/mpich-bundle.sh [OUT_DIR]

On a Debian 12 machine with mpich installed (scripts/install-deps.sh): builds dtmpi-tune and
dtmpi-bench against MPICH (Release, no CUDA) in build-mpich-host/, then copies them with the
MPICH runtime they need into OUT_DIR (default build-mpich-bundle/, about 45 MiB):
  bin/   mpiexec (Hydra) and hydra_pmi_proxy, dtmpi-tune, dtmpi-bench
  lib/   libmpich.so.12 (and its Fortran binding), UCX (libucp/uct/ucs/ucm and lib/ucx/),
         libhwloc, libnuma, libslurm, libudev, libgfortran, libquadmath, libmetis
Use it elsewhere with PATH=OUT_DIR/bin:$PATH LD_LIBRARY_PATH=OUT_DIR/lib; the device tool
carries it with carry=["build-mpich-bundle"], and `scripts/gpu-check.sh coll-mpich` uses it.
EOF
    exit 0 ;;
esac
# OUT_DIR against the caller's directory, then from the repository root
out=$(realpath -m "${1:-$(dirname "$0")/../build-mpich-bundle}")
cd "$(dirname "$0")/.."
build=build-mpich-host
# never remove a folder this script did not make
if [ -e "$out" ] && [ ! -f "$out/.dtmpi-mpich-bundle" ]; then
  echo "mpich-bundle.sh: $out exists and is not a bundle made here; not replacing it" >&2
  exit 1
fi
[ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTMPI_CUDA=OFF \
  -DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich \
  -DMPIEXEC_EXECUTABLE="$(command -v mpiexec.mpich)" > /dev/null
cmake --build $build -j "$(nproc)" --target dtmpi-tune dtmpi-bench
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/ucx"
touch "$out/.dtmpi-mpich-bundle"
git rev-parse HEAD > "$out/REV" 2>/dev/null || true  # the commit its dtmpi binaries were built from
lib=/usr/lib/x86_64-linux-gnu
cp "$(command -v mpiexec.hydra)" "$out/bin/mpiexec"
cp "$(command -v hydra_pmi_proxy)" "$out/bin/"
cp $build/tools/dtmpi-tune $build/bench/dtmpi-bench "$out/bin/"
cp -L $lib/libmpich.so.12 "$out/lib/"
for l in libhwloc.so.15 libucp.so.0 libucs.so.0 libuct.so.0 libucm.so.0 libnuma.so.1 libslurm.so.38 libudev.so.1 \
         libmpichfort.so.12 libgfortran.so.5 libquadmath.so.0 libmetis.so.5; do
  cp -L $lib/$l "$out/lib/"
done
# shared memory and cross-memory attach only (the InfiniBand modules need
# verbs libraries a single host has no use for)
for m in $lib/ucx/libuct_*.so.0; do
  case $m in *_ib.* | *_rdmacm.*) ;; *) cp -L "$m" "$out/lib/ucx/" ;; esac
done
# everything the binaries load is in the bundle or in any glibc/libstdc++ system
missing=$(LD_LIBRARY_PATH="$out/lib" ldd "$out"/bin/* "$out"/lib/*.so* 2>/dev/null | grep "not found" | sort -u || true)
[ -z "$missing" ] || { echo "mpich-bundle.sh: libraries not found:"; echo "$missing"; exit 1; } >&2
du -sh "$out"
