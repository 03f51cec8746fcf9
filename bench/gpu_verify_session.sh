#!/usr/bin/env bash
# On the GPU machine, in one device call under a deadline (BUDGET seconds, default 575): builds
# everything, runs the GPU test suites, `streamsafe pipeline` in each config, the pipeline
# comparison, the allocator for torch and variable-length inference; packs /tmp/r into $OUT.
set -u
R=/tmp/r; mkdir -p $R; start=$(date +%s); deadline=$((start + ${BUDGET:-575}))
left() { local n=$(( deadline - $(date +%s) - ${1:-0} )); [ $n -lt 5 ] && n=5; echo $n; }
export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64
{ nvidia-smi; date -u; python3 -c 'import torch;print(torch.__version__)'; nproc; } > $R/machine.txt 2>&1
bash bench/gpu_build_on_device.sh > $R/build.txt 2>&1 || { tail -30 /tmp/streamsafe-build.build.log >> $R/build.txt; }
echo "build done at $(( $(date +%s) - start )) s" | tee -a $R/log.txt
TEST_TIMEOUT=90 timeout $(left 300) bash bench/gpu_session.sh tests > $R/tests.txt 2>&1
cp -r /tmp/streamsafe-gpu.* $R/tests_out 2>/dev/null
echo "tests done at $(( $(date +%s) - start )) s" | tee -a $R/log.txt
for c in copy_bound sm_bound balanced; do
  timeout 40 .device-build/bin/streamsafe pipeline --backend cuda --config $c --steps 200 --check --json > $R/pipeline_$c.json 2> $R/pipeline_$c.err
done
timeout 30 .device-build/bin/streamsafe pipeline --backend cuda --config balanced --steps 200 > $R/pipeline_balanced.txt 2>&1
echo "pipeline done at $(( $(date +%s) - start )) s" | tee -a $R/log.txt
timeout $(left 150) bash bench/pipeline/run_compare.sh $R/compare > $R/compare_stdout.txt 2>&1
echo "compare done at $(( $(date +%s) - start )) s" | tee -a $R/log.txt
export STREAMSAFE_TORCH_ALLOC_LIB=$PWD/.device-build/lib/libstreamsafe_torch_alloc.so PYTHONPATH=$PWD/.device-build/python PYTHONUNBUFFERED=1
timeout $(left 70) python3 tests/torch/allocator_gpu_test.py --out $R/allocator_gpu_test.txt > $R/allocator_gpu_test.log 2>&1
echo "allocator_gpu_test done at $(( $(date +%s) - start )) s" | tee -a $R/log.txt
timeout $(left 10) python3 bench/torch/varlen_inference.py --variants native,streamsafe,native_expandable --requests ${REQUESTS:-8} --warmup 2 --out $R/varlen.json > $R/varlen.log 2>&1
echo "varlen done at $(( $(date +%s) - start )) s" | tee -a $R/log.txt
tar czf $OUT/run2.tar.gz -C /tmp r
