#!/usr/bin/env bash
# Replays each training and inference trace as a loop of 1 and of 10 iterations, with the repeat
# plan on (the default) and off, and prints one JSON line per run (with per-iteration figures).
#   usage: bench/alloc/repeat_plan_matrix.sh STREAMSAFE_BINARY [BACKEND] [TRACE_DIR] > runs.jsonl
#   then:  python3 bench/alloc/repeat_plan_table.py runs.jsonl
# The inference traces are made with scripts/gen_inference_trace.py --requests 10 (seeds 1-3,
# and seed 1 on 4 streams) when missing.
set -uo pipefail  # a failed run prints its error line and the matrix goes on
binary=$1
backend=${2:-sim}
traces=${3:-build/traces}
here=$(cd "$(dirname "$0")/../.." && pwd)
resnet=${RESNET_TRACE:-}
for candidate in "$traces" "$here/bench/traces" "$here/../shared/data"; do
  [ -n "$resnet" ] || [ ! -f "$candidate/resnet50_train.alloc.csv.gz" ] || resnet=$candidate/resnet50_train.alloc.csv.gz
done
mkdir -p "$traces"
for seed in 1 2 3; do
  [ -f "$traces/inf10_s$seed.csv.gz" ] || python3 "$here/scripts/gen_inference_trace.py" "$traces/inf10_s$seed.csv.gz" --requests 10 --seed "$seed"
done
[ -f "$traces/inf10_s1_st4.csv.gz" ] || python3 "$here/scripts/gen_inference_trace.py" "$traces/inf10_s1_st4.csv.gz" --requests 10 --seed 1 --streams 4
for trace in "$resnet" "$here/bench/traces/gpt2_train.alloc.csv.gz" "$traces"/inf10_s{1,2,3}.csv.gz "$traces/inf10_s1_st4.csv.gz"; do
  for conf in repeat_plan:on repeat_plan:off; do
    for iterations in 1 10; do
      line=$("$binary" replay "$trace" --backend "$backend" --iterations "$iterations" --conf "$conf" ${BUSY:+--busy} --json 2>&1 | tail -1)
      case $line in "{"*) ;; *) line="{\"error\":$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$line")}" ;; esac
      echo "{\"trace\":\"$(basename "$trace")\",\"conf\":\"$conf\",\"iters\":$iterations,\"run\":$line}"
    done
  done
done
