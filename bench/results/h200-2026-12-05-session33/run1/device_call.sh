# One device call: builds the CLI and the allocator's GPU suites (cuda on, sm_90) and replay_bench
# with PyTorch's c10 allocator; runs the suites; replays every trace of
# bench/results/sim-2026-12-04-session31/calls_matrix.sh on the cuda backend; then rounds of
# bench/alloc/replay_bench.sh over all those traces, streamsafe's default beside c10, idle and
# busy, until about 430 s have passed, and the medians (replay_ratios.py). Everything lands in
# $OUT/run.tar.gz (the device tool returns few files).
#   run(command="bash bench/results/h200-2026-12-05-session33/run1/device_call.sh", carry=[".device-build"])
set -u; R=/tmp/r; rm -rf $R; mkdir -p $R/tests; T=$PWD/.device-build/traces; build=/tmp/b; s=$(date +%s)
pack() { tar czf $OUT/run.tar.gz -C /tmp r; }
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
deps=$PWD/.device-build/deps/usr; zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:$PWD/.device-build/lib:/usr/local/cuda/lib64
suites="alloc_repeat_plan_test alloc_reuse_test alloc_rules_test alloc_lifetime_test alloc_thread_stress_test"
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_TESTS=ON -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_PYTHON=OFF -DSTREAMSAFE_CUDA=ON -DSTREAMSAFE_TORCH_NATIVE=OFF -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" > $R/build.txt 2>&1
cmake --build $build -j 16 --target streamsafe_cli $suites >> $R/build.txt 2>&1; echo "built $(( $(date +%s)-s )) s rc $?" | tee -a $R/log.txt
bash bench/gpu_build_torch_bench.sh > $R/build_torch.txt 2>&1; echo "replay_bench built $(( $(date +%s)-s )) s rc $?" | tee -a $R/log.txt
for t in $suites; do
  timeout 60 $build/tests/alloc/$t --gtest_brief=1 > $R/tests/$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests/$t.txt | tr '\n' ' ')" | tee -a $R/log.txt
done
BACKEND=cuda TRACES=$T RESNET=$T/resnet50_train.alloc.csv.gz timeout 100 bash bench/results/sim-2026-12-04-session31/calls_matrix.sh $build/tools/streamsafe/streamsafe > $R/calls_matrix_cuda.txt 2>&1
echo "matrix $(( $(date +%s)-s )) s" | tee -a $R/log.txt; pack
TR="$T/resnet50_train.alloc.csv.gz $PWD/bench/traces/gpt2_train.alloc.csv.gz $(echo $T/inf10_s{1,2,3,4,5,6}.csv.gz $T/inf10_s{1,2}_st4.csv.gz $T/inf2_s1.csv.gz)"
for r in 1 2 3 4; do
  [ $(( $(date +%s)-s )) -lt 300 ] || break
  RESOURCES="streamsafe:remap c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=40 timeout $(( 560-($(date +%s)-s) )) bench/alloc/replay_bench.sh $R/round_$r.jsonl > $R/round_$r.stdout.txt 2>&1
  echo "round $r $(( $(date +%s)-s )) s" | tee -a $R/log.txt; pack
done
python3 - $R <<'PY'
import json, sys, glob, os
R = sys.argv[1]
out = open(os.path.join(R, 'rounds.jsonl'), 'w')
header = None
for path in sorted(glob.glob(os.path.join(R, 'round_*.jsonl'))):
    r = int(path.rsplit('_', 1)[1].split('.')[0])
    for line in open(path):
        d = json.loads(line)
        if 'round' not in d:
            if header is None: header = d; out.write(line)
            continue
        d['round'] = r
        out.write(json.dumps(d) + '\n')
PY
python3 bench/alloc/replay_ratios.py $R/rounds.jsonl > $R/rounds.ratios.txt 2>&1
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt; pack
