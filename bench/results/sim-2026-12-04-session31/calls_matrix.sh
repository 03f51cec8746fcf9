#!/usr/bin/env bash
# Replays each trace as a 10-iteration loop with each CLI given and prints one line per run:
# device calls over 10 iterations against 1, reserved/live of the first iteration and of
# iterations 2-10, host synchronizations and device calls of the first iterations.
#   usage: [BACKEND=sim|cuda] [TRACES=dir] [RESNET=path] \
#          bench/results/sim-2026-12-04-session31/calls_matrix.sh STREAMSAFE_BINARY... > table.txt
# Traces: TRACES (default build/traces)/inf10_s{1..6}.csv.gz, inf10_s{1,2}_st4.csv.gz,
# inf2_s1.csv.gz (made with scripts/gen_inference_trace.py --requests 10|2 --seed N [--streams 4]
# when missing), ResNet-50 (RESNET, default ../shared/data/) and GPT-2 (bench/traces/).
set -euo pipefail
cd "$(dirname "$0")/../../.."
traces=${TRACES:-build/traces}
backend=${BACKEND:-sim}
resnet=${RESNET:-../shared/data/resnet50_train.alloc.csv.gz}
for seed in 1 2 3 4 5 6; do
  [ -f $traces/inf10_s$seed.csv.gz ] || python3 scripts/gen_inference_trace.py $traces/inf10_s$seed.csv.gz --requests 10 --seed $seed
done
for seed in 1 2; do
  [ -f $traces/inf10_s${seed}_st4.csv.gz ] || python3 scripts/gen_inference_trace.py $traces/inf10_s${seed}_st4.csv.gz --requests 10 --seed $seed --streams 4
done
[ -f $traces/inf2_s1.csv.gz ] || python3 scripts/gen_inference_trace.py $traces/inf2_s1.csv.gz --requests 2 --seed 1
for trace in $traces/inf10_s{1,2,3,4,5,6}.csv.gz $traces/inf10_s{1,2}_st4.csv.gz $traces/inf2_s1.csv.gz \
             "$resnet" bench/traces/gpt2_train.alloc.csv.gz; do
  for binary in "$@"; do
    "$binary" replay "$trace" --backend "$backend" --iterations 10 --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
calls = [p['device_calls'] for p in d['per_iteration']]
syncs = [p['host_syncs'] for p in d['per_iteration']]
print('%-26s %-10s calls 10/1 %.4f  reserved/live first %.4f steady %.4f  syncs %s  calls %s' % (
    sys.argv[1], sys.argv[2], sum(calls) / calls[0], d['first_reserved_over_live'],
    d['steady_reserved_over_live'], syncs[:4], calls[:5]))" "$(basename "$trace" .csv.gz)" "$(basename "$binary")" ||
      echo "$(basename "$trace" .csv.gz) $(basename "$binary"): the replay failed"
  done
done
