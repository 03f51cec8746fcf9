#!/usr/bin/env bash
# On the GPU machine, one device call: streamsafe's default policy beside PyTorch's c10 allocator,
# trace by trace, idle and busy, in rounds until ROUND_BOUND seconds have passed, so that every
# ratio is taken against c10 in the same round on the same card; then the medians and ranges of
# those ratios (bench/alloc/replay_ratios.py). Everything lands in $OUT/run.tar.gz (packed after
# each trace, so a call cut short still returns every trace it finished).
#
#   run(command="TREE=<commit> bash bench/alloc/c10_rounds_device.sh", carry=[".device-build"])
#
# Environment (defaults in brackets):
#   TREE         the commit of the carried tree, written into every line (the machine's .git may lag)
#   ROUND_BOUND  seconds after which no new trace starts [480]
#   TRACE_NAMES  traces of .device-build/traces, in this order [all 11 of the calls matrix:
#                ResNet-50, GPT-2 (bench/traces/), inference seeds 1-6, seeds 1-2 on 4 streams, 2 requests]
#   OLD          with a tree in .device-build/old_src (git archive OLD | tar -x -C ...), its
#                replay_bench runs too, right after the tree's, as the resource streamsafe:remap@old [off]
# .device-build/ also holds the simdjson and zlib the machine lacks (bench/stage_gpu_deps.sh).
set -u
R=/tmp/r; rm -rf $R; mkdir -p $R; T=$PWD/.device-build/traces; s=$(date +%s)
pack() { tar czf "$OUT/run.tar.gz" -C /tmp r; }
elapsed() { echo $(( $(date +%s) - s )); }
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch; print(torch.__version__)'; echo "tree ${TREE:-unknown}"; } > $R/machine.txt 2>&1
# What a clock read costs here: every allocator call is timed between two.
g++ -O2 -std=c++20 bench/probes/clock_probe.cpp -o /tmp/clock_probe && /tmp/clock_probe > $R/clock.txt 2>&1
deps=$PWD/.device-build/deps/usr
zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:$PWD/.device-build/lib:/usr/local/cuda/lib64
torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
bash bench/gpu_build_torch_bench.sh > $R/build_torch.txt 2>&1 &
if [ -n "${OLD:-}" ]; then
  { cmake -S .device-build/old_src -B /tmp/torch-bench-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DSTREAMSAFE_TESTS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_TORCH_DIR="$torch_dir" \
      -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" &&
    cmake --build /tmp/torch-bench-old --target replay_bench -j 8; } > $R/build_torch_old.txt 2>&1 &
fi
wait
echo "built $(elapsed) s" | tee -a $R/log.txt; pack
TR="$T/resnet50_train.alloc.csv.gz $PWD/bench/traces/gpt2_train.alloc.csv.gz $(echo $T/inf10_s{1,2,3,4,5,6}.csv.gz $T/inf10_s{1,2}_st4.csv.gz $T/inf2_s1.csv.gz)"
[ -n "${TRACE_NAMES:-}" ] && TR=$(for n in $TRACE_NAMES; do echo $T/$n.csv.gz; done)
who_list="new"; [ -n "${OLD:-}" ] && who_list="new old"
for r in 1 2 3 4 5 6; do
  for trace in $TR; do
    [ "$(elapsed)" -lt "${ROUND_BOUND:-480}" ] || break 2
    for who in $who_list; do
      bin=.device-build/bin/replay_bench; res="streamsafe:remap c10"; commit=${TREE:-new}
      [ $who = old ] && bin=/tmp/torch-bench-old/bench/alloc/replay_bench && res=streamsafe:remap && commit=${OLD}
      REPLAY_BENCH=$bin STREAMSAFE_COMMIT=$commit RESOURCES="$res" MODES="idle busy" TRACES="$trace" RUN_TIMEOUT=40 \
        timeout 120 bench/alloc/replay_bench.sh $R/one.jsonl >> $R/stdout.txt 2>&1
      python3 -c "
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get('bench') != 'replay_bench': continue
    d['round'] = int(sys.argv[2])
    if sys.argv[3] == 'old': d['resource'] += '@old'
    print(json.dumps(d))" $R/one.jsonl $r $who >> $R/rounds.jsonl
    done
    echo "round $r $(basename $trace .csv.gz) $(elapsed) s" >> $R/log.txt; pack
  done
  echo "round $r done $(elapsed) s" | tee -a $R/log.txt; pack
done
python3 bench/alloc/replay_ratios.py $R/rounds.jsonl > $R/ratios.txt 2>&1
echo "total $(elapsed) s" | tee -a $R/log.txt; pack
