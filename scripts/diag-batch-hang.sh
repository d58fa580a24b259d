bash scripts/gpu-check.sh build >/dev/null || exit 1
export PATH=/opt/torch/.venv/bin:$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
which gdb eu-stack 2>&1 | head -2
DTMPI_BATCH_PACKS=1 mpiexec -n 2 build-gpu/bench/dtmpi-bench halo --gpu --iters 1 --size 64 > $OUT/halo.txt 2>&1 &
sleep 35
nvidia-smi --query-gpu=utilization.gpu --format=csv
for p in $(pgrep -f "bench/dtmpi-bench halo"); do echo "=== pid $p"; gdb -p $p -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^#|^Thread" | grep -v "^$" | head -60; done > $OUT/bt.txt 2>&1
head -c 6000 $OUT/bt.txt
cat $OUT/halo.txt | head
pkill -f dtmpi-bench; pkill mpiexec
