# Session 38's short device call, for what device time is left after failed starts: session 37's
# call (bench/results/h200-2026-12-06-session37/run1/device_call.sh) without the round beside c10
# (and without building its PyTorch bench). The VMM probe
# first (bench/probes/vmm_batch_probe.cu: one cuMemUnmap over several adjacent mappings, a
# handle released while mapped), then the CLI and the allocator's GPU suites built with cuda on
# (sm_90), the suites (MemorySource's cuda variant among them) and the calls matrix on cuda.
# Everything lands in $OUT/run.tar.gz, packed after each step.
#   run(command="bash bench/results/h100-2026-12-07-session38/run2/device_call_short.sh", carry=[".device-build"])
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
wait; echo "built $(elapsed) s" | tee -a $R/log.txt
for t in $suites; do
  timeout 90 $build/tests/alloc/$t --gtest_brief=1 > $R/tests/$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests/$t.txt | tr '\n' ' ')" | tee -a $R/log.txt
done
pack
BACKEND=cuda TRACES=$T RESNET=$T/resnet50_train.alloc.csv.gz timeout 120 bash bench/results/sim-2026-12-04-session31/calls_matrix.sh $build/tools/streamsafe/streamsafe > $R/calls_matrix_cuda.txt 2>&1
for t in inf10_s1 inf10_s2_st4; do $build/tools/streamsafe/streamsafe replay $T/$t.csv.gz --backend cuda --iterations 10 --json > $R/$t.cuda.json 2>&1; done
echo "matrix $(elapsed) s" | tee -a $R/log.txt; pack
echo "total $(elapsed) s" | tee -a $R/log.txt; pack
