# One device call: builds replay_bench (with PyTorch's c10 allocator) from the tree and replays
# the inference traces whose switch this session changed, streamsafe's default beside c10, idle
# and busy, in rounds until about 190 s have passed; then the medians (replay_ratios.py).
#   run(command="bash bench/results/h200-2026-12-04-session31/run2/device_call.sh", carry=[".device-build"])
set -u; R=$OUT/r; rm -rf $R; mkdir -p $R .device-build/bin .device-build/lib; T=.device-build/traces; s=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
bash bench/gpu_build_torch_bench.sh > $R/build.txt 2>&1; echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
TR="$T/inf10_s2.csv.gz $T/inf10_s3.csv.gz $T/inf2_s1.csv.gz"
for r in 1 2 3 4 5; do
  [ $(( $(date +%s)-s )) -lt 150 ] || break
  RESOURCES="streamsafe:remap c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=40 timeout 60 bench/alloc/replay_bench.sh $R/new_$r.jsonl > $R/new_$r.stdout.txt 2>&1
  echo "round $r $(( $(date +%s)-s )) s" | tee -a $R/log.txt
done
python3 - $R <<'PY'
import json, sys, glob, os
R = sys.argv[1]
out = open(os.path.join(R, 'rounds.jsonl'), 'w')
header = None
for path in sorted(glob.glob(os.path.join(R, 'new_*.jsonl'))):
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
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt
# the results are written under $OUT as they come, so a timeout keeps what was measured
