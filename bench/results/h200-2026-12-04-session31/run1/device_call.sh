# One device call: builds the CLI and the allocator's GPU suites from the tree (cuda on, sm_90),
# replays every trace of bench/results/sim-2026-12-04-session31/calls_matrix.sh on the cuda
# backend, runs the suites, and leaves everything in $OUT/run.tar.gz.
#   run(command="bash bench/results/h200-2026-12-04-session31/run1/device_call.sh", carry=[".device-build"])
set -u; R=/tmp/r; rm -rf $R; mkdir -p $R/tests; T=$PWD/.device-build/traces; build=/tmp/b; s=$(date +%s)
{ nvidia-smi; date -u; nproc; lscpu | head -20; git log -1 --format=%H 2>/dev/null; } > $R/machine.txt 2>&1
deps=$PWD/.device-build/deps/usr; zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
suites="alloc_repeat_plan_test alloc_reuse_test alloc_rules_test alloc_lifetime_test alloc_thread_stress_test"
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_TESTS=ON -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_PYTHON=OFF -DSTREAMSAFE_CUDA=ON -DSTREAMSAFE_TORCH_NATIVE=OFF -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" > $R/build.txt 2>&1
cmake --build $build -j 16 --target streamsafe_cli $suites >> $R/build.txt 2>&1; echo "built $(( $(date +%s)-s )) s rc $?" | tee -a $R/log.txt
mkdir -p $R/bin && cp $build/tools/streamsafe/streamsafe $R/bin/cuda
BACKEND=cuda TRACES=$T RESNET=$T/resnet50_train.alloc.csv.gz timeout 100 bash bench/results/sim-2026-12-04-session31/calls_matrix.sh $R/bin/cuda > $R/calls_matrix_cuda.txt 2>&1
echo "matrix $(( $(date +%s)-s )) s" | tee -a $R/log.txt
for t in $suites; do
  timeout 60 $build/tests/alloc/$t --gtest_brief=1 > $R/tests/$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests/$t.txt | tr '\n' ' ')" | tee -a $R/log.txt
done
echo "done $(( $(date +%s)-s )) s" | tee -a $R/log.txt
rm -rf $R/bin; tar czf $OUT/run.tar.gz -C /tmp r
