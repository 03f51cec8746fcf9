set -u; R=/tmp/r; rm -rf $R; mkdir -p $R .device-build/bin .device-build/lib; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
s=$(date +%s); cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
bash bench/gpu_build_torch_bench.sh > $R/build.txt 2>&1; cmake --build /tmp/torch-bench --target streamsafe_cli -j16 >> $R/build.txt 2>&1; cp /tmp/torch-bench/tools/streamsafe/streamsafe .device-build/bin/
rm -rf /tmp/base-src && mkdir -p /tmp/base-src/.device-build && tar xzf .device-build/base.tar.gz -C /tmp/base-src && ln -s $PWD/.device-build/deps /tmp/base-src/.device-build/deps
(cd /tmp/base-src && sed -i 's#/tmp/torch-bench#/tmp/torch-bench-base#g' bench/gpu_build_torch_bench.sh && bash bench/gpu_build_torch_bench.sh) > $R/build_base.txt 2>&1; cp /tmp/base-src/.device-build/bin/replay_bench .device-build/bin/replay_bench_base
echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
timeout 60 bash -c "RESNET_TRACE=$T/resnet50_train.alloc.csv.gz bench/alloc/repeat_plan_matrix.sh .device-build/bin/streamsafe cuda $T" > $R/repeat_plan_matrix.jsonl 2>&1; echo "matrix $(( $(date +%s)-s )) s" | tee -a $R/log.txt
printf 'action,addr,size,stream\nalloc,1,8000000,0\nfree_requested,1,8000000,0\nalloc,2,8000000,1\nfree_requested,2,8000000,1\n' > $R/peaks_in_turn.csv
for h in "" "--headroom 1.1"; do timeout 30 .device-build/bin/streamsafe replay $R/peaks_in_turn.csv --backend cuda --iterations 10 $h --json 2>&1 | tail -1; done > $R/peaks_in_turn.jsonl
timeout 150 bash bench/results/h200-2026-12-04-session30/run3/tests.sh; echo "tests $(( $(date +%s)-s )) s" | tee -a $R/log.txt
TR="$T/inf10_s1.csv.gz $T/inf10_s1_st4.csv.gz"
for r in 1 2 3; do
  [ $(( $(date +%s)-s )) -lt 300 ] || break
  STREAMSAFE_COMMIT=$COMMIT RESOURCES="streamsafe:remap c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=60 timeout 120 bench/alloc/replay_bench.sh $R/new_$r.jsonl > $R/new_$r.stdout.txt 2>&1
  STREAMSAFE_COMMIT=$BASE REPLAY_BENCH=$PWD/.device-build/bin/replay_bench_base RESOURCES="streamsafe:remap" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=60 timeout 80 bench/alloc/replay_bench.sh $R/base_$r.jsonl > $R/base_$r.stdout.txt 2>&1
  echo "round $r $(( $(date +%s)-s )) s" | tee -a $R/log.txt
done
python3 - $R <<'PY'
import json, sys, glob, os
R = sys.argv[1]
out = open(os.path.join(R, 'rounds.jsonl'), 'w')
header = None
for path in sorted(glob.glob(os.path.join(R, 'new_*.jsonl')) + glob.glob(os.path.join(R, 'base_*.jsonl'))):
    r = int(path.rsplit('_', 1)[1].split('.')[0])
    base = os.path.basename(path).startswith('base_')
    for i, line in enumerate(open(path)):
        d = json.loads(line)
        if 'round' not in d:
            if header is None and not base: header = d; out.write(line)
            continue
        d['round'] = r
        if base and d.get('resource', '').startswith('streamsafe'): d['resource'] = 'base-' + d.get('commit', 'base') + ':' + d['resource']
        out.write(json.dumps(d) + '\n')
PY
python3 bench/alloc/replay_ratios.py $R/rounds.jsonl > $R/rounds.ratios.txt 2>&1
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt
tar czf $OUT/run.tar.gz -C /tmp r
