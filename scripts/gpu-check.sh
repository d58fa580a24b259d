#!/usr/bin/env bash
# One call on the GPU machine: build (CUDA, Open MPI), run the GPU tests (and
# compute-sanitizer memcheck on the GPU test binary), run the GPU benchmarks,
# print a short table. Results go to $OUT (or ./gpu-out) for bench/results/.
#   scripts/gpu-check.sh [STEP] [--quick]   (the steps: scripts/gpu-check.sh --help)
# `start` is a session's first call (under 10 minutes on a fresh machine):
# build, the tests, the halo, issue 4's pingpong rows (1, 4, 64 MiB), and the
# settings still off by default against the default (toggles).
set -uo pipefail
usage() {
  cat <<'EOF'
usage: scripts/gpu-check.sh [STEP] [--quick]

On the GPU machine: builds dtmpi (CUDA, the machine's MPI) into build-gpu/ and runs
STEP, writing logs and tables to $OUT (or ./gpu-out). STEP is one of
  all (default)  build, test, bench, model, halo, pingpong
  start          a session's first call: build, test, halo, issue4, toggles
  compare        BASE_SRC=<a source tree of an earlier commit>: builds it too and
                 runs pingpong, pack and halo --gpu with both builds, alternated
                 (a change that must not move the numbers)
  build | test | bench | pingpong | chunks | model | halo | trace | issue4 |
  toggles | packasync | batchhang | sharedgpu | latency |
  rma            one-sided communication (issue 21): ctest -L rma (host and GPU windows against
                 MPICH's results), mpi4py's RMA tests with CuPy when MPI4PY_TESTS is set,
                 dtmpi-bench rma
  mpi4py         MPI4PY_TESTS=<mpi4py's test/ folder>: its suite with CuPy arrays, 2 ranks,
                 preloaded, next to the plain MPI with NumPy only (scripts/outsider-mpi4py.sh);
                 M4P_COLL="V1;V2": also at 4 ranks with DTMPI_COLL=Vi (M4P_ONLY_COLL=1: only those)
  stencil        dtmpi::stencil on device memory (issue 23): builds its tests and examples/heat3d,
                 ctest -L stencil (GPU exchange by global coordinate at 1, 2, 4 ranks and 2 emulated
                 nodes, each by both peer paths: staged and device buffers through dtmpi; the solver
                 on the GPU), then the Astaroth-pattern proxy (heat3d --gpu: 8 doubles, radius 3, 3
                 exchanges per step, 256^3 per subdomain) at 1 rank, 1 rank with 2 subdomains, 2 ranks
                 blocking and overlapped by the staged path (plain MPI) and by the device path
                 (libdtmpi preloaded, --path device), then dtmpi-bench stencil --gpu (CUDA graphs
                 off / on, against the packed-bytes limit and the plain-MPI halo; with 2+ GPUs also
                 one rank on 2 GPUs and 2 ranks on 2 GPUs each: set_gpus, peer-access kernels)
  stencil-overlap the stencil tests as above, then how much of the exchange an overlapped step
                 hides (heat3d --overlap, 256^3, radius 3, 8 doubles) by the interior's arithmetic
                 intensity (--flops 0, 256, 1024) and the overlapped launches' grid
                 (DTMPI_STENCIL_OVERLAP_BLOCKS=0: full, 1 block per SM): 1 rank, 1 rank x 2 subdomains,
                 2 ranks sharing GPU 0 (device and staged path), with 2+ GPUs also 2 ranks on 2 GPUs;
                 file stencil-overlap.txt. --quick: ctest of test_stencil_gpu only (no memcheck), the
                 2-rank rows only (1 block per SM, --flops 0 and 256)
  coll           dtmpi's collectives on the host's cores (issue 22): builds dtmpi-tune and dtmpi-bench,
                 tunes the full table on all cores (up to 16 ranks, every collective, blocking and 16 in
                 flight), the exhaustive search on 4 ranks (claim C17), dtmpi-bench protocols on 4 ranks
                 (claims C3, C4), then dtmpi-bench coll at 2, 4,
                 8 and 16 ranks with DTMPI_COLL=tuned reading that table (its quick form: 8 B-64 KiB;
                 and its --in-place form on all ranks;
                 the tuner's log has every size to 16 MiB beside the system MPI's time)
  coll-mpich     the same suite under MPICH 4.0.2 (Debian's, with dtmpi-tune and dtmpi-bench built
                 against it): needs build-mpich-bundle/ from scripts/mpich-bundle.sh, carried along;
                 files coll-mpich-*
  scope          builds dtmpi-scope (and what it needs) and runs the transfer suite (docs/scope.md)
                 in its quick form (1 B-1 GiB in powers of 4, 3 repetitions; under 4 minutes on one
                 H100): JSON, summary and figures into $OUT/scope/, the tables printed (bandwidth
                 next to the nominal figures, the method next to cudaMemcpy + wall clock); then
                 dtmpi-measure --quick takes its copy terms from those results and dtmpi-bench
                 model --quick checks the model's choices (SCOPE_ARGS: more dtmpi-scope options)
--quick: the benchmarks' shorter form where they have one.
EOF
}
steps=" all start compare build test bench pingpong chunks model halo trace issue4 toggles packasync batchhang sharedgpu latency mpi4py scope rma stencil stencil-overlap coll coll-mpich "
case ${1:-} in
  --help | -h) usage; exit 0 ;;
esac
what=${1:-all}
quick=${2:-}
if [[ $steps != *" $what "* ]] || { [ -n "$quick" ] && [ "$quick" != --quick ]; } || [ $# -gt 2 ]; then
  echo "gpu-check.sh: unknown step or option: $*" >&2
  echo "Run 'scripts/gpu-check.sh --help' for the usage." >&2
  exit 2
fi
cd "$(dirname "$0")/.."
if [ "$what" = start ]; then
  self="$PWD/scripts/gpu-check.sh"
  bash "$self" build && bash "$self" test && bash "$self" halo
  bash "$self" issue4
  bash "$self" toggles
  exit $?
fi
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
build=build-gpu
step() { echo; echo "=== $*"; }

if [ "$what" = all ] || [ "$what" = build ]; then
  step "build ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
  cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure.log" 2>&1 \
    || { tail -30 "$out/configure.log"; exit 1; }
  cmake --build $build -j "$(nproc)" > "$out/build.log" 2>&1 || { grep -E "error" -A5 "$out/build.log" | head -60; exit 1; }
  echo "built"
  $build/tools/dtmpi-info | tee "$out/dtmpi-info.txt"
fi

if [ "$what" = all ] || [ "$what" = test ]; then
  step "tests"
  # per-test and overall time limits: a hang costs minutes of device time, not the call's ten
  (cd $build && timeout 420 ctest -j 8 --output-on-failure --timeout 240 2>&1 | tee "$out/ctest.log" \
    | grep -E "Test +#|tests passed|Failed|Skipped|Timeout")
  if [ "$(nvidia-smi -L | wc -l)" -gt 1 ]; then
    step "GPU tests again with both ranks on one GPU (CUDA_VISIBLE_DEVICES=0)"
    (cd $build && CUDA_VISIBLE_DEVICES=0 timeout 300 ctest -L gpu -j 4 --output-on-failure --timeout 240 2>&1 \
      | tee "$out/ctest-one-gpu.log" | grep -E "Test +#|tests passed|Failed|Skipped")
  fi
  step "compute-sanitizer memcheck (test_gpu_pack, 300 random types)"
  DTMPI_TEST_TYPES=300 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 \
    $build/tests/test_gpu_pack --gtest_filter=-GpuPack.LargeObjects > "$out/memcheck.log" 2>&1
  echo "memcheck exit $? ($(grep -c 'Invalid' "$out/memcheck.log") invalid accesses reported)"
  tail -3 "$out/memcheck.log"
fi

# The collective suite (issue 22) with one MPI: `mpirun` runs a program on N
# ranks bound to cores, `bin` holds dtmpi-tune and dtmpi-bench, `tag` names
# the files. Five files in $out (the device tool returns a few files per call):
# coll[-tag]-{table.json,tune.txt,exhaustive-4.txt,protocols.txt,bench.txt}.
coll_suite() {
  local bin=$1 tag=$2; shift 2
  local ranks=$(( $(nproc) < 16 ? $(nproc) : 16 ))
  local table="$out/coll$tag-table.json"
  timeout 300 "$@" $ranks "$bin/dtmpi-tune" $quick --out "$table" 2>&1 \
    | tee "$out/coll$tag-tune.txt" | grep -E "LogGP|wrote|limit"
  timeout 120 "$@" 4 "$bin/dtmpi-tune" --quick --exhaustive --blocking-only \
    --out /tmp/coll$tag-exhaustive-4.json 2>&1 | tee "$out/coll$tag-exhaustive-4.txt" | grep -E "LogGP|wrote|model"
  # claims C3 and C4 (protocols over the node segment) on 4 ranks
  timeout 120 "$@" 4 "$bin/dtmpi-bench" protocols 2>&1 | tee "$out/coll$tag-protocols.txt"
  : > "$out/coll$tag-bench.txt"
  for n in 2 4 8 16; do
    [ $n -gt "$ranks" ] && break
    step "dtmpi-bench coll on $n ranks (tuned = the table above)" | tee -a "$out/coll$tag-bench.txt"
    DTMPI_COLL=tuned DTMPI_COLL_TABLE="$table" timeout 240 "$@" $n \
      "$bin/dtmpi-bench" coll --quick 2>&1 | tee -a "$out/coll$tag-bench.txt" | grep -E "^summary"
  done
  step "dtmpi-bench coll --in-place on $ranks ranks (tuned = the table's in-place entries)" | tee -a "$out/coll$tag-bench.txt"
  DTMPI_COLL=tuned DTMPI_COLL_TABLE="$table" timeout 240 "$@" $ranks \
    "$bin/dtmpi-bench" coll --quick --in-place 2>&1 | tee -a "$out/coll$tag-bench.txt" | grep -E "^summary"
}

if [ "$what" = coll ]; then
  step "dtmpi's collectives on $(nproc) cores: dtmpi-tune, then dtmpi-bench coll with its table"
  [ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > /tmp/configure-coll.log 2>&1
  cmake --build $build -j "$(nproc)" --target dtmpi dtmpi-tune dtmpi-bench > /tmp/build-coll.log 2>&1 \
    || { grep -E "error" -A5 /tmp/build-coll.log | head -40; exit 1; }
  mkdir -p /tmp/coll-bin && ln -sf "$PWD/$build/tools/dtmpi-tune" "$PWD/$build/bench/dtmpi-bench" /tmp/coll-bin/
  coll_suite /tmp/coll-bin "" mpiexec --bind-to core -n
fi

if [ "$what" = coll-mpich ]; then
  # MPICH on this machine: the bundle scripts/mpich-bundle.sh made on the
  # Debian VM (carried as build-mpich-bundle); UCX over shared memory
  bundle=$PWD/build-mpich-bundle
  [ -x "$bundle/bin/mpiexec" ] || { echo "coll-mpich: no $bundle (scripts/mpich-bundle.sh, carry it)"; exit 1; }
  [ "$(cat "$bundle/REV" 2>/dev/null)" = "$(git rev-parse HEAD 2>/dev/null)" ] \
    || echo "coll-mpich: warning: the bundle's dtmpi binaries are of commit $(cat "$bundle/REV" 2>/dev/null || echo '?'), not of this tree's HEAD"
  export PATH="$bundle/bin:$PATH" LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  step "dtmpi's collectives under MPICH 4.0.2 (Debian's, carried) on $(nproc) cores"
  coll_suite "$bundle/bin" "-mpich" "$bundle/bin/mpiexec" -bind-to core -n
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  step "dtmpi-bench pack --gpu $quick"
  $build/bench/dtmpi-bench pack --gpu $quick --csv "$out/gpu-pack.csv" | tee "$out/gpu-pack.txt"
fi

if [ "$what" = all ] || [ "$what" = model ]; then
  step "dtmpi-measure $quick, then dtmpi-bench model (auto vs every forced method)"
  export DTMPI_CACHE_DIR="$out/model-cache"
  mpiexec -n 2 $build/tools/dtmpi-measure $quick 2>&1 | tr '\r' '\n' | grep -v "s left" | tee "$out/dtmpi-measure.txt"
  cp "$DTMPI_CACHE_DIR"/model-*.json "$DTMPI_CACHE_DIR"/model-*.decisions.csv "$out/" 2>/dev/null
  mpiexec -n 2 $build/bench/dtmpi-bench model $quick --csv "$out/gpu-model.csv" | tee "$out/gpu-model.txt" | tail -3
fi

if [ "$what" = all ] || [ "$what" = halo ]; then
  iters=5; [ "$quick" = --quick ] && iters=2
  step "dtmpi-bench halo --gpu (256^3, radius 3, 8 quantities, pitch 512 B): 2 ranks on 2 GPUs"
  mpiexec -n 2 $build/bench/dtmpi-bench halo --gpu --iters $iters --csv "$out/halo-gpu-2ranks-2gpus.csv" \
    | tee "$out/halo-gpu-2ranks-2gpus.txt"
  step "dtmpi-bench halo --gpu: 1 rank on 1 GPU (every neighbour is the rank itself)"
  CUDA_VISIBLE_DEVICES=0 mpiexec -n 1 $build/bench/dtmpi-bench halo --gpu --iters $iters \
    --csv "$out/halo-gpu-1rank-1gpu.csv" | tee "$out/halo-gpu-1rank-1gpu.txt"
fi

if [ "$what" = trace ]; then
  # where the time of one halo exchange goes: each dtmpi variant alone, traced
  # (DTMPI_TRACE), summarized by tools/trace_timeline.py over its last exchange
  for v in "isend      dtmpi" "alltoallv  dtmpi" "alltoallw  dtmpi" "limit      device"; do
    tag=$(echo "$v" | awk '{print $1}')
    step "trace: halo $v (2 ranks on 2 GPUs)"
    rm -f "$out/trace-$tag".*.txt
    DTMPI_TRACE="$out/trace-$tag" mpiexec -n 2 $build/bench/dtmpi-bench halo --gpu --iters 2 --only "$v" --no-limits \
      | grep -E "dtmpi|limit"
    python3 tools/trace_timeline.py "$out/trace-$tag" --last ${TRACE_LAST:-1500} --by-total | head -${TRACE_ROWS:-40}
    python3 tools/trace_timeline.py "$out/trace-$tag" --last ${TRACE_LAST:-1500} --raw > "$out/trace-$tag-raw.txt"
    rm -f "$out/trace-$tag".*.txt
  done
fi

if [ "$what" = sharedgpu ]; then
  # two processes taking turns on one GPU (configures and builds the probe alone if needed)
  [ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure.log" 2>&1
  cmake --build $build --target dtmpi-probe-shared-gpu > "$out/build-probe.log" 2>&1 || { tail -20 "$out/build-probe.log"; exit 1; }
  step "dtmpi-probe-shared-gpu, both ranks on GPU 0 (twice)"
  for r in 1 2; do CUDA_VISIBLE_DEVICES=0 timeout 120 mpiexec -n 2 $build/bench/dtmpi-probe-shared-gpu; done \
    | tee "$out/probe-shared-gpu.txt"
fi

if [ "$what" = scope ]; then
  # issue 24: the suite, then the model from its results (builds only what it runs)
  [ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure.log" 2>&1
  step "build dtmpi-scope, dtmpi-measure, dtmpi-bench ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
  cmake --build $build -j "$(nproc)" --target dtmpi-scope dtmpi-measure dtmpi-bench > "$out/build-scope.log" 2>&1 \
    || { grep -E "error|Google Benchmark" -A5 "$out/build-scope.log" | head -40; tail -5 "$out/build-scope.log"; exit 1; }
  echo "built"
  mkdir -p "$out/scope"
  export DTMPI_CACHE_DIR="$out/model-cache"
  step "dtmpi-scope --quick ${SCOPE_ARGS:-} (one line per benchmark: $out/scope/run.txt)"
  t0=$(date +%s)
  timeout 480 mpiexec -n 1 $build/tools/dtmpi-scope --quick --out "$out/scope" ${SCOPE_ARGS:-} > "$out/scope/run.txt" \
    2> >(tee "$out/scope/progress.txt" | grep -E "benchmarks|rror" >&2)
  rc=$?
  echo "dtmpi-scope exit $rc after $(( $(date +%s) - t0 )) s"
  sed -n '/^nominal figures\|^no GPU/,$p' "$out/scope/run.txt"
  for py in python3 /usr/bin/python3; do
    if $py -c "import matplotlib" 2>/dev/null; then $py scripts/plot_scope.py "$out/scope/scope.json" "$out/scope/scope"; break; fi
  done
  step "dtmpi-measure --quick: the copy terms from dtmpi-scope's results, the rest measured"
  mpiexec -n 2 $build/tools/dtmpi-measure --quick 2>&1 | tr '\r' '\n' | grep -v "s left" | tee "$out/scope/dtmpi-measure.txt" \
    | grep -E "dtmpi-scope|wrote|points"
  cp "$DTMPI_CACHE_DIR"/model-*.json "$DTMPI_CACHE_DIR"/model-*.decisions.csv "$out/scope/" 2>/dev/null
  step "dtmpi-bench model --quick: the model's choices (auto vs every forced method)"
  timeout 300 mpiexec -n 2 $build/bench/dtmpi-bench model --quick --csv "$out/scope/gpu-model.csv" \
    > "$out/scope/gpu-model.txt" 2>&1
  echo "exit $?"; grep -E "^model:|cases:|decision cost" "$out/scope/gpu-model.txt"
fi

if [ "$what" = issue4 ]; then
  step "issue 4 rows: dtmpi-bench pingpong --gpu --quick, 1, 4 and 64 MiB objects"
  for f in "1024 KiB" "4096 KiB" "65536 KiB"; do
    mpiexec -n 2 $build/bench/dtmpi-bench pingpong --gpu --quick --filter "$f" 2>&1 | grep -v "dtmpi warn"
  done | tee "$out/gpu-pingpong-issue4.txt"
fi

if [ "$what" = stencil ] || [ "$what" = stencil-overlap ]; then
  # issue 23: the stencil library on device memory (builds only what it runs)
  [ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure.log" 2>&1
  step "build the stencil tests and heat3d ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
  cmake --build $build -j "$(nproc)" --target dtmpi dtmpi_plain_name test_stencil_partition test_stencil_exchange test_stencil_errors \
    test_stencil_placement test_stencil_pieces test_stencil_gpu test_stencil_shm test_node_channels heat3d stencil_jacobi dtmpi-bench > "$out/build-stencil.log" 2>&1 || { grep -E "error" -A5 "$out/build-stencil.log" | head -40; exit 1; }
  # --quick: only the GPU exchange tests, no memcheck
  only="-L stencil"
  [ -n "$quick" ] && only="-R test_stencil_gpu"
  step "ctest $only (host and device domains, the solver on CPU and GPU)"
  (cd $build && timeout 300 ctest $only -j 4 --output-on-failure --timeout 200 2>&1 | tee "$out/ctest-stencil.log" \
    | grep -E "Test +#|tests passed|Failed|Skipped|Timeout")
  if [ -z "$quick" ]; then
    step "compute-sanitizer memcheck: test_stencil_gpu on one rank (the pack / unpack / copy kernels)"
    timeout 240 compute-sanitizer --error-exitcode 1 $build/tests/stencil/test_stencil_gpu 2>&1 \
      | tee "$out/stencil-memcheck.log" | grep -E "ERROR SUMMARY|PASSED|FAILED" | head -5
  fi
fi

if [ "$what" = stencil-overlap ]; then
  step "overlap: heat3d --gpu --overlap 256^3, radius 3, 8 doubles, by --flops and DTMPI_STENCIL_OVERLAP_BLOCKS"
  preloaded="tests/run-preloaded.sh $build/src/libdtmpi.so"
  ov="--gpu --radius 3 --quantities 8 --substeps 3 --steps 2 --bench 20 --overlap"
  # one heat3d run: $1 ranks, $2 DTMPI_STENCIL_OVERLAP_BLOCKS, $3 the GPUs
  # the ranks see (CUDA_VISIBLE_DEVICES; heat3d puts a node's k-th rank on
  # GPU k mod count), then heat3d's options (and the preloading wrapper first
  # where the first is tests/run-preloaded.sh)
  heat() {
    local n=$1 b=$2 gpus=$3; shift 3
    local pre=""
    if [ "$1" = preloaded ]; then pre=$preloaded; shift; fi
    DTMPI_STENCIL_OVERLAP_BLOCKS=$b CUDA_VISIBLE_DEVICES=$gpus timeout 240 mpiexec -x DTMPI_STENCIL_OVERLAP_BLOCKS \
      -x CUDA_VISIBLE_DEVICES -n "$n" $pre $build/examples/heat3d $ov "$@" | grep -E "overlap:|FAIL"
  }
  {
    # --quick: the messages' rows at one block per SM, --flops 0 and 256
    if [ -n "$quick" ]; then
      for f in 0 256; do
        echo "heat3d: --flops $f, DTMPI_STENCIL_OVERLAP_BLOCKS=1, 2 ranks on 1 GPU, device path / staged:"
        heat 2 1 0 preloaded --flops $f --n 512 256 256 --path device
        heat 2 1 0 --flops $f --n 512 256 256 --path staged
        if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
          echo "heat3d: --flops $f, DTMPI_STENCIL_OVERLAP_BLOCKS=1, 2 ranks on 2 GPUs, device path (twice) / staged:"
          heat 2 1 0,1 preloaded --flops $f --n 512 256 256 --path device
          heat 2 1 0,1 preloaded --flops $f --n 512 256 256 --path device
          heat 2 1 0,1 --flops $f --n 512 256 256 --path staged
        fi
      done
    fi
    for f in 0 256 1024; do
      [ -n "$quick" ] && break
      for b in 0 1; do
        echo "heat3d: --flops $f, DTMPI_STENCIL_OVERLAP_BLOCKS=$b, 1 rank, 1 subdomain:"
        heat 1 $b 0 --flops $f --n 256 256 256
      done
    done
    for f in 0 256; do
      [ -n "$quick" ] && break
      for b in 0 1; do
        echo "heat3d: --flops $f, DTMPI_STENCIL_OVERLAP_BLOCKS=$b, 1 rank x 2 subdomains / 2 ranks on 1 GPU, device path / staged:"
        heat 1 $b 0 --flops $f --n 512 256 256 --per-rank 2
        heat 2 $b 0 preloaded --flops $f --n 512 256 256 --path device
        heat 2 $b 0 --flops $f --n 512 256 256 --path staged
      done
    done
    # with 2+ GPUs: 2 ranks, each on its own GPU -- the exchange crosses the
    # GPU link (CUDA IPC on the device path), which the interior's memory
    # traffic does not use; each row twice (the runs vary by several points)
    if [ -z "$quick" ] && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
      for f in 0 256; do
        for b in 0 1; do
          echo "heat3d: --flops $f, DTMPI_STENCIL_OVERLAP_BLOCKS=$b, 2 ranks on 2 GPUs, device path (twice) / staged:"
          heat 2 $b 0,1 preloaded --flops $f --n 512 256 256 --path device
          heat 2 $b 0,1 preloaded --flops $f --n 512 256 256 --path device
          heat 2 $b 0,1 --flops $f --n 512 256 256 --path staged
        done
      done
    fi
  } 2>&1 | tee "$out/stencil-overlap.txt"
fi

if [ "$what" = stencil ]; then
  step "Astaroth-pattern proxy: heat3d --gpu, 8 doubles, radius 3, 3 exchanges per step (256^3 per subdomain)"
  proxy="--gpu --radius 3 --quantities 8 --substeps 3 --steps 10 --bench 30"
  # the 2-rank rows by each peer path: staged (heat3d alone: a plain MPI in
  # front) and device (libdtmpi preloaded; --path device fails rather than
  # stage if dtmpi is not in front); "peer path" in each bench line says which
  preloaded="tests/run-preloaded.sh $build/src/libdtmpi.so"
  {
    timeout 240 mpiexec -n 1 $build/examples/heat3d $proxy --n 256 256 256
    timeout 240 mpiexec -n 1 $build/examples/heat3d $proxy --n 512 256 256 --per-rank 2
    # overlap: the copies and unpacks of an overlapped exchange on the full
    # grid (DTMPI_STENCIL_OVERLAP_BLOCKS=0, as exchange()) and on 1, 2, 4
    # blocks per SM beside the interior kernel, small to large subdomains
    for n in 64 128 256; do
      for b in 0 1 2 4; do
        echo "heat3d --overlap $n^3, DTMPI_STENCIL_OVERLAP_BLOCKS=$b:"
        DTMPI_STENCIL_OVERLAP_BLOCKS=$b timeout 240 mpiexec -x DTMPI_STENCIL_OVERLAP_BLOCKS -n 1 $build/examples/heat3d $proxy --n $n $n $n --overlap | grep -E "overlap:|FAIL"
      done
    done
    for b in 0 1; do
      echo "heat3d: DTMPI_STENCIL_OVERLAP_BLOCKS=$b:"
      DTMPI_STENCIL_OVERLAP_BLOCKS=$b timeout 240 mpiexec -x DTMPI_STENCIL_OVERLAP_BLOCKS -n 1 $build/examples/heat3d $proxy --n 512 256 256 --per-rank 2 --overlap
      DTMPI_STENCIL_OVERLAP_BLOCKS=$b timeout 240 mpiexec -x DTMPI_STENCIL_OVERLAP_BLOCKS -n 2 $build/examples/heat3d $proxy --n 512 256 256 --path staged --overlap
      DTMPI_STENCIL_OVERLAP_BLOCKS=$b timeout 240 mpiexec -x DTMPI_STENCIL_OVERLAP_BLOCKS -n 2 $preloaded $build/examples/heat3d $proxy --n 512 256 256 --path device --overlap
    done
    timeout 240 mpiexec -n 2 $build/examples/heat3d $proxy --n 512 256 256 --path staged
    timeout 240 mpiexec -n 2 $preloaded $build/examples/heat3d $proxy --n 512 256 256 --path device
  } 2>&1 | grep -E "^heat3d|FAIL" | tee "$out/stencil-astaroth-proxy.txt"
  step "dtmpi-bench stencil --gpu: exchange vs its packed-bytes limit, CUDA graphs off / on, the plain-MPI halo"
  {
    timeout 240 mpiexec -n 1 $build/bench/dtmpi-bench stencil --gpu --extent 256 --per-rank 2 --graphs both --no-halo
    # the access patterns apart: the x faces (rows of 3 doubles at the row
    # pitch) and the y and z faces (whole rows)
    for axes in x yz; do
      timeout 240 mpiexec -n 1 $build/bench/dtmpi-bench stencil --gpu --extent 256 --per-rank 2 --graphs on --no-halo --axes $axes
    done
    timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench stencil --gpu --extent 256 --path staged --graphs both --no-halo
    timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench stencil --gpu --extent 256 --path device --graphs both
    timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench stencil --gpu --extent 64 --path device --graphs both --no-halo
    # several GPUs per rank (set_gpus): one rank's two subdomains on two GPUs
    # (peer-access kernels) next to two ranks of one GPU each (CUDA IPC), and
    # two ranks with two GPUs each (the node's GPU links measured for placement)
    if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
      timeout 240 mpiexec -n 1 $build/bench/dtmpi-bench stencil --gpu --extent 256 --per-rank 2 --gpus 2 --no-halo
      # the same by copies between the GPUs instead of peer-access kernels
      DTMPI_STENCIL_PEER_ACCESS=0 timeout 240 mpiexec -n 1 $build/bench/dtmpi-bench stencil --gpu --extent 256 \
        --per-rank 2 --gpus 2 --no-halo
      timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench stencil --gpu --extent 256 --per-rank 2 --gpus 2 --path device --no-halo
    fi
  } 2>&1 | tee "$out/stencil-bench.txt"
fi

if [ "$what" = rma ]; then
  # issue 21: one-sided communication on GPU memory (builds only what it runs)
  [ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure.log" 2>&1
  step "build dtmpi, rma_program ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
  cmake --build $build -j "$(nproc)" --target dtmpi rma_program rma_errors rma_attributes rma_passive_progress rma_pair_types \
    rma_blocking_progress rma_large_messages dtmpi-bench > "$out/build-rma.log" 2>&1 \
    || { grep -E "error" -A5 "$out/build-rma.log" | head -40; exit 1; }
  step "ctest -L rma: the random RMA program against MPICH's results, host (DTMPI_RMA=all) and GPU memory"
  (cd $build && timeout 300 ctest -L rma -j 4 --output-on-failure --timeout 200 2>&1 | tee "$out/ctest-rma.log" \
    | grep -E "Test +#|tests passed|Failed|Skipped|Timeout|seed")
  if [ -n "${MPI4PY_TESTS:-}" ]; then
    step "mpi4py's RMA tests (test_rma, test_rma_nb, test_win, test_msgspec) with CuPy, preloaded, 2 ranks"
    for t in test_rma test_rma_nb test_win test_msgspec; do
      OMPI_MCA_osc=pt2pt timeout 200 mpiexec -n 2 -x LD_PRELOAD="$(ls $PWD/$build/src/libdtmpi-*.so | head -1)" \
        python3 "$MPI4PY_TESTS/main.py" --no-numba -q -i $t > "$out/m4p-rma-$t.log" 2>&1
      echo "$t: exit $? $(grep -aE '^(Ran|OK|FAILED)' "$out/m4p-rma-$t.log" | tr '\n' ' ')"
      grep -aE '^(FAIL|ERROR):' "$out/m4p-rma-$t.log" | sort | uniq -c | head -12
    done
  fi
  step "dtmpi-bench rma: put/get/accumulate on GPU windows (same node: CUDA IPC) vs manual, limit, the system MPI's host window"
  OMPI_MCA_osc=pt2pt timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench rma --gpu 2>&1 | grep -v "dtmpi warn" \
    | tee "$out/rma-bench.txt" | tail -14
  step "dtmpi-bench rma with DTMPI_TEST_TWO_KERNEL_MOVE=1: the paths before the layout kernels (acc-host: offset lists)"
  DTMPI_TEST_TWO_KERNEL_MOVE=1 OMPI_MCA_osc=pt2pt timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench rma --gpu 2>&1 \
    | grep -v "dtmpi warn" | tee "$out/rma-bench-before.txt" | tail -14
  step "dtmpi-bench rma with rank 1 on another (emulated) node: DTMPI_RANKS_PER_NODE=1, the message protocol"
  DTMPI_RANKS_PER_NODE=1 OMPI_MCA_osc=pt2pt timeout 240 mpiexec -n 2 $build/bench/dtmpi-bench rma --gpu 2>&1 \
    | grep -v "dtmpi warn" | tee "$out/rma-bench-nodes.txt" | tail -14
fi

if [ "$what" = mpi4py ]; then
  # builds the library if no earlier step did (a session's first call)
  [ -f $build/build.ninja ] || cmake -S . -B $build -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure.log" 2>&1
  cmake --build $build -j "$(nproc)" --target dtmpi > "$out/build-dtmpi.log" 2>&1 \
    || { grep -E "error" -A5 "$out/build-dtmpi.log" | head -40; exit 1; }
  step "mpi4py test suite: plain NumPy vs preloaded CuPy+NumPy (2 ranks)"
  bash scripts/outsider-mpi4py.sh "$build" "${MPI4PY_TESTS:?MPI4PY_TESTS=<test dir>}" "$out"
fi

if [ "$what" = latency ]; then
  # issue 29: dtmpi's added latency on 8-byte host messages with the GPU in
  # use, next to the same without it (DTMPI_CUDA=off), alternated twice
  step "dtmpi-bench latency: GPU present (default) and DTMPI_CUDA=off, alternated"
  for v in auto off auto off; do
    echo "--- DTMPI_CUDA=$v"
    DTMPI_CUDA=$v timeout 120 mpiexec -n 2 $build/bench/dtmpi-bench latency 2>&1 | grep -v "dtmpi warn"
  done | tee "$out/latency-gpu.txt"
fi

if [ "$what" = toggles ]; then
  # the settings that are off until measured on two GPUs, each against the
  # default in the same call: DTMPI_BATCH_PACKS on the halo (isend variant),
  # DTMPI_IPC_CHUNK_MIN on issue 4's 64 MiB rows
  step "DTMPI_BATCH_PACKS=0/1: dtmpi-bench halo --gpu --iters 5, 2 ranks"
  for v in 0 1 0 1; do
    echo "--- DTMPI_BATCH_PACKS=$v"
    DTMPI_BATCH_PACKS=$v timeout 60 mpiexec -n 2 $build/bench/dtmpi-bench halo --gpu --iters 5 | grep -E "^(isend|alltoall|limit)"
  done 2>&1 | tee "$out/gpu-toggle-batch.txt"
  step "DTMPI_IPC_CHUNK_MIN=0/8M: dtmpi-bench pingpong --gpu --quick, 64 MiB objects"
  for v in 0 8M 0 8M; do
    echo "--- DTMPI_IPC_CHUNK_MIN=$v"
    DTMPI_IPC_CHUNK_MIN=$v timeout 60 mpiexec -n 2 $build/bench/dtmpi-bench pingpong --gpu --quick --filter "65536 KiB" \
      2>&1 | grep -E "65536"
  done 2>&1 | tee "$out/gpu-toggle-chunks.txt"
fi

if [ "$what" = packasync ] || [ "$what" = toggles ]; then
  # DTMPI_PACK_ASYNC (off by default: MPI_Pack/MPI_Unpack between device buffers return once queued) against
  # the default on the halo, alternated; 1 rank on 1 GPU (and 2 ranks where there are two GPUs)
  for n in 1 2; do
    [ "$n" = 2 ] && [ "$(nvidia-smi -L | wc -l)" -lt 2 ] && continue
    step "DTMPI_PACK_ASYNC=0/1: dtmpi-bench halo --gpu --iters 5, $n rank(s)"
    for v in 0 1 0 1; do
      echo "--- DTMPI_PACK_ASYNC=$v"
      DTMPI_PACK_ASYNC=$v timeout 90 mpiexec -n $n $build/bench/dtmpi-bench halo --gpu --iters 5 | grep -E "^(isend|alltoall|limit)"
    done 2>&1 | tee "$out/gpu-toggle-pack-async-$n.txt"
  done
fi

if [ "$what" = batchhang ]; then
  # session 7: one 128^3 run with 2 ranks sharing one GPU and DTMPI_BATCH_PACKS=1 did not finish in 120 s.
  # Repeat it (alternating with batching off); a run still going after 75 s gets every thread's backtrace.
  step "128^3 halo, 2 ranks on one GPU, DTMPI_BATCH_PACKS 1/0/1/0 (75 s each, backtraces if hung)"
  for v in ${HANG_RUNS:-1 0 1 0}; do
    echo "--- DTMPI_BATCH_PACKS=$v"
    rm -f "$out"/hang-trace.*.txt
    DTMPI_TRACE="$out/hang-trace" DTMPI_BATCH_PACKS=$v CUDA_VISIBLE_DEVICES=0 timeout 300 mpiexec -n 2 $build/bench/dtmpi-bench halo --gpu \
      --iters 3 --size 128 > "$out/batchhang-run.txt" 2>&1 &
    pid=$!
    for _ in $(seq 75); do kill -0 $pid 2>/dev/null || break; sleep 1; done
    if kill -0 $pid 2>/dev/null; then
      echo "still running after 75 s: each rank's last trace points (SIGUSR1 writes the trace ring)"
      pkill -USR1 -x dtmpi-bench; sleep 2
      for f in "$out"/hang-trace.*.txt; do
        echo "## $f ($(wc -l < "$f") points)"; tail -n ${HANG_TAIL:-45} "$f"; cp "$f" "$f.hung-$RANDOM"
      done
      gdb=$(command -v gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
      [ -n "$gdb" ] && for p in $(pgrep -x dtmpi-bench); do
        timeout 90 "$gdb" -p "$p" -batch -ex "info cuda contexts" -ex "info cuda kernels" -ex "info cuda blocks" \
          -ex "thread apply all bt" > "$out/bt-$v-$p.txt" 2>&1
        echo "## process $p: GPU kernels, then the main thread"
        awk '/^Thread [0-9]+ /{exit} {print}' "$out/bt-$v-$p.txt" | grep -v "^\[New\|^\[Thread\|^$" | cut -c1-220 | head -40
        grep -E "^#[0-9]+ .*(dtmpi|MPI_|cu[A-Z])" "$out/bt-$v-$p.txt" | head -12
      done
      pkill -x dtmpi-bench
      [ -n "${HANG_STOP:-}" ] && { wait $pid; break; }
    fi
    wait $pid; echo "rc $?"
    grep -E "^(isend|alltoall|limit)" "$out/batchhang-run.txt"; cp "$out/batchhang-run.txt" "$out/batchhang-$v-$RANDOM.txt"
  done
fi

if [ "$what" = compare ]; then
  [ -d "${BASE_SRC:-}" ] || { echo "compare: BASE_SRC must name the earlier source tree" >&2; exit 2; }
  step "build the baseline ($BASE_SRC) into build-base"
  cmake -S "$BASE_SRC" -B build-base -G Ninja -DDTMPI_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DMPI_C_COMPILER=mpicc -DMPIEXEC_EXECUTABLE="$(command -v mpiexec)" > "$out/configure-base.log" 2>&1 \
    || { tail -30 "$out/configure-base.log"; exit 1; }
  cmake --build build-base -j "$(nproc)" --target dtmpi-bench > "$out/build-base.log" 2>&1 \
    || { grep -E "error" -A5 "$out/build-base.log" | head -40; exit 1; }
  for round in 1 2; do
    for b in build-base $build; do
      step "round $round: $b"
      for f in "1 KiB" "64 KiB" "1024 KiB" "16384 KiB"; do
        mpiexec -n 2 $b/bench/dtmpi-bench pingpong --gpu --quick --filter "$f" 2>&1 | grep -v "dtmpi warn" | tail -n +2
      done | tee -a "$out/compare-pingpong-$(basename $b).txt"
      $b/bench/dtmpi-bench pack --gpu --quick 2>&1 | tee -a "$out/compare-pack-$(basename $b).txt" | tail -4
      mpiexec -n 1 $b/bench/dtmpi-bench halo --gpu --iters 3 2>&1 | tee -a "$out/compare-halo1-$(basename $b).txt" \
        | grep -E "^(isend|alltoall|limit)"
      mpiexec -n 2 $b/bench/dtmpi-bench halo --gpu --iters 3 2>&1 | tee -a "$out/compare-halo2-$(basename $b).txt" \
        | grep -E "^(isend|alltoall|limit)"
    done
  done
fi

if [ "$what" = chunks ]; then
  step "pipelined method: chunk size sweep (DTMPI_PIPELINE_CHUNK), one-way us"
  for c in 256K 512K 1M 2M 4M 8M; do
    echo "--- chunk $c"
    DTMPI_PIPELINE_CHUNK=$c mpiexec -n 2 $build/bench/dtmpi-bench pingpong --gpu --quick --filter "4096 KiB / 256" | tail -1
    DTMPI_PIPELINE_CHUNK=$c mpiexec -n 2 $build/bench/dtmpi-bench pingpong --gpu --quick --filter "65536 KiB / 4096" | tail -1
  done 2>&1 | tee "$out/gpu-pipeline-chunks.txt"
fi

if [ "$what" = all ] || [ "$what" = bench ] || [ "$what" = pingpong ]; then
  step "dtmpi-bench pingpong --gpu (2 ranks)"
  mpiexec -n 2 $build/bench/dtmpi-bench pingpong --gpu $quick --csv "$out/gpu-pingpong.csv" | tee "$out/gpu-pingpong.txt"
  if [ "$(nvidia-smi -L | wc -l)" -gt 1 ]; then
    step "dtmpi-bench pingpong --gpu, both ranks on one GPU"
    CUDA_VISIBLE_DEVICES=0 mpiexec -n 2 $build/bench/dtmpi-bench pingpong --gpu $quick \
      --csv "$out/gpu-pingpong-one-gpu.csv" | tee "$out/gpu-pingpong-one-gpu.txt"
  fi
fi
