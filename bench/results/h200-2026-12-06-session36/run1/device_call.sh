# Session 36's device call: an A/B of the repeat plan's serving of unconfirmed periods in one run
# on one card. Builds the CLI and the allocator's GPU suites at the tree's commit (cuda on,
# sm_90), replay_bench with PyTorch's c10 allocator at the tree's commit ("new") and at the
# commit whose source is in .device-build/old_src ("old"); runs the suites and the calls matrix
# on cuda; then rounds over every trace of bench/results/sim-2026-12-04-session31/calls_matrix.sh,
# idle and busy, each trace replayed by new, c10 and old back to back, until about 480 s have
# passed (ROUND_BOUND, default 480; TRACE_NAMES: a subset of the traces in .device-build/traces); then the medians of each over c10 (bench/alloc/replay_ratios.py). Everything lands in
# $OUT/run.tar.gz.
# The old source is staged first: mkdir -p .device-build/old_src && git archive OLD | tar -x -C .device-build/old_src
#   run(command="bash bench/results/h200-2026-12-06-session36/run1/device_call.sh", carry=[".device-build"])
set -u; R=/tmp/r; rm -rf $R; mkdir -p $R/tests; T=$PWD/.device-build/traces; build=/tmp/b; s=$(date +%s)
pack() { tar czf $OUT/run.tar.gz -C /tmp r; }
elapsed() { echo $(( $(date +%s)-s )); }
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag > $R/thp.txt 2>&1
deps=$PWD/.device-build/deps/usr; zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:$PWD/.device-build/lib:/usr/local/cuda/lib64
depflags=(-Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib")
torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
suites="alloc_repeat_plan_test alloc_reuse_test alloc_rules_test alloc_lifetime_test alloc_thread_stress_test"
{ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_TESTS=ON -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_PYTHON=OFF -DSTREAMSAFE_CUDA=ON -DSTREAMSAFE_TORCH_NATIVE=OFF -DCMAKE_CXX_FLAGS="-isystem $deps/include" "${depflags[@]}" && cmake --build $build -j 8 --target streamsafe_cli $suites; } > $R/build.txt 2>&1 &
bash bench/gpu_build_torch_bench.sh > $R/build_torch.txt 2>&1 &
{ cmake -S .device-build/old_src -B /tmp/torch-bench-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_TESTS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_TORCH_DIR="$torch_dir" "${depflags[@]}" && cmake --build /tmp/torch-bench-old --target replay_bench -j 8; } > $R/build_torch_old.txt 2>&1 &
wait; echo "built $(elapsed) s: $(ls -la $build/tools/streamsafe/streamsafe .device-build/bin/replay_bench /tmp/torch-bench-old/bench/alloc/replay_bench 2>&1 | wc -l) of 3 binaries" | tee -a $R/log.txt
for t in $suites; do
  timeout 60 $build/tests/alloc/$t --gtest_brief=1 > $R/tests/$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests/$t.txt | tr '\n' ' ')" | tee -a $R/log.txt
done
BACKEND=cuda TRACES=$T RESNET=$T/resnet50_train.alloc.csv.gz timeout 100 bash bench/results/sim-2026-12-04-session31/calls_matrix.sh $build/tools/streamsafe/streamsafe > $R/calls_matrix_cuda.txt 2>&1
echo "matrix $(elapsed) s" | tee -a $R/log.txt; pack
TR="$T/resnet50_train.alloc.csv.gz $PWD/bench/traces/gpt2_train.alloc.csv.gz $(echo $T/inf10_s{1,2,3,4,5,6}.csv.gz $T/inf10_s{1,2}_st4.csv.gz $T/inf2_s1.csv.gz)"
[ -n "${TRACE_NAMES:-}" ] && TR=$(for n in $TRACE_NAMES; do echo $T/$n.csv.gz; done)  # a subset, in this order
for r in 1 2 3 4; do
  for trace in $TR; do
    [ $(elapsed) -lt ${ROUND_BOUND:-480} ] || break 2
    for who in new old; do
      bin=.device-build/bin/replay_bench; res="streamsafe:remap c10"
      [ $who = old ] && bin=/tmp/torch-bench-old/bench/alloc/replay_bench && res=streamsafe:remap
      REPLAY_BENCH=$bin STREAMSAFE_COMMIT=$who RESOURCES="$res" MODES="idle busy" TRACES="$trace" RUN_TIMEOUT=40 \
        timeout 120 bench/alloc/replay_bench.sh $R/one.jsonl >> $R/round_$r.stdout.txt 2>&1
      python3 -c "
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get('bench') != 'replay_bench': continue
    d['round'] = int(sys.argv[2])
    if sys.argv[3] == 'old': d['resource'] += '@old'
    print(json.dumps(d))" $R/one.jsonl $r $who >> $R/rounds.jsonl
    done
  done
  echo "round $r $(elapsed) s" | tee -a $R/log.txt; pack
done
python3 bench/alloc/replay_ratios.py $R/rounds.jsonl > $R/rounds.ratios.txt 2>&1
echo "total $(elapsed) s" | tee -a $R/log.txt; pack
