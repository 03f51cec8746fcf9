# Session 38's device call (planned in sessions 36 and 37, whose machines never started): first the
# VMM probe (bench/probes/vmm_batch_probe.cu, built
# here on the GPU machine: is one cuMemUnmap over several adjacent mappings allowed, and does a
# handle released while mapped keep its memory until the unmap?), then at the tree's commit the
# CLI, the allocator's GPU suites (with MemorySource, which checks the same on the cuda backend)
# and replay_bench built with cuda on (sm_90); the suites; the calls matrix on cuda; one round of
# bench/alloc/replay_bench.sh over every trace, streamsafe's default beside c10, idle and busy,
# and its ratios. Everything lands in $OUT/run.tar.gz.
# ROUND_END (default 430): the seconds from the start by which the round stops.
#   run(command="bash bench/results/h100-2026-12-07-session38/full_call_not_run/device_call.sh", carry=[".device-build"])
set -u; R=/tmp/r; rm -rf $R; mkdir -p $R/tests; T=$PWD/.device-build/traces; build=/tmp/b; s=$(date +%s)
pack() { tar czf $OUT/run.tar.gz -C /tmp r; }
elapsed() { echo $(( $(date +%s)-s )); }
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
/usr/local/cuda/bin/nvcc -O2 -arch=sm_90 bench/probes/vmm_batch_probe.cu -L/usr/local/cuda/lib64/stubs -lcuda -o /tmp/vmm_batch_probe > $R/probe_build.txt 2>&1 ||
  cp .device-build/probe/vmm_batch_probe /tmp/vmm_batch_probe  # built on the development machine the same way
timeout 60 /tmp/vmm_batch_probe > $R/vmm_batch_probe.txt 2>&1; echo "probe exit $? $(elapsed) s" | tee -a $R/log.txt; pack
deps=$PWD/.device-build/deps/usr; zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:$PWD/.device-build/lib:/usr/local/cuda/lib64
suites="alloc_repeat_plan_test alloc_reuse_test alloc_rules_test alloc_lifetime_test alloc_thread_stress_test alloc_trace_test"
{ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_TESTS=ON -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_PYTHON=OFF -DSTREAMSAFE_CUDA=ON -DSTREAMSAFE_TORCH_NATIVE=OFF -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" && cmake --build $build -j 10 --target streamsafe_cli $suites; } > $R/build.txt 2>&1 &
bash bench/gpu_build_torch_bench.sh > $R/build_torch.txt 2>&1 &
wait; echo "built $(elapsed) s" | tee -a $R/log.txt
for t in $suites; do
  timeout 90 $build/tests/alloc/$t --gtest_brief=1 > $R/tests/$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests/$t.txt | tr '\n' ' ')" | tee -a $R/log.txt
done
BACKEND=cuda TRACES=$T RESNET=$T/resnet50_train.alloc.csv.gz timeout 120 bash bench/results/sim-2026-12-04-session31/calls_matrix.sh $build/tools/streamsafe/streamsafe > $R/calls_matrix_cuda.txt 2>&1
for t in inf10_s1 inf10_s2_st4; do $build/tools/streamsafe/streamsafe replay $T/$t.csv.gz --backend cuda --iterations 10 --json > $R/$t.cuda.json 2>&1; done
echo "matrix $(elapsed) s" | tee -a $R/log.txt; pack
TR="$T/resnet50_train.alloc.csv.gz $PWD/bench/traces/gpt2_train.alloc.csv.gz $(echo $T/inf10_s{1,2,3,4,5,6}.csv.gz $T/inf10_s{1,2}_st4.csv.gz $T/inf2_s1.csv.gz)"
RESOURCES="streamsafe:remap c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=40 timeout $(( ${ROUND_END:-430}-$(elapsed) )) bench/alloc/replay_bench.sh $R/round_1.jsonl > $R/round_1.stdout.txt 2>&1
python3 bench/alloc/replay_ratios.py $R/round_1.jsonl > $R/rounds.ratios.txt 2>&1
echo "total $(elapsed) s" | tee -a $R/log.txt; pack
