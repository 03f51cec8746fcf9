#!/usr/bin/env bash
# On the GPU machine, after bench/gpu_build_on_device.sh: the allocator's training-loop replays on
# cuda (idle and --busy, each policy in POLICIES) for the traces carried in .device-build/traces
# (ResNet-50: copy ../shared/data/resnet50_train.alloc.csv.gz there first), bench/traces, and a
# variable-length inference trace generated there (REQUESTS requests, default 20: about 0.5 M
# operations a pass). Raw JSON lines to $1, one per replay.
set -uo pipefail
out=${1:?usage: gpu_session_steady.sh OUT.jsonl}
bin=.device-build/bin
export LD_LIBRARY_PATH="$PWD/.device-build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
traces=.device-build/traces
mkdir -p "$traces"
[ -f "$traces/inference_seed1.csv.gz" ] ||
  python3 scripts/gen_inference_trace.py "$traces/inference_seed1.csv.gz" --requests "${REQUESTS:-20}" --seed 1
: > "$out"
for trace in "$traces"/*.csv.gz bench/traces/*.csv.gz; do
  for conf in ${POLICIES:-expandable_growth:remap expandable_growth:settle}; do
    for busy in "" --busy; do
      line=$("$bin/streamsafe" replay "$trace" --backend cuda --iterations "${ITERATIONS:-10}" $busy --conf "$conf" --json 2>&1 | tail -1)
      echo "{\"trace\":\"$(basename "$trace")\",\"conf\":\"$conf\",\"busy\":\"$busy\",\"result\":$line}" | tee -a "$out" | cut -c1-300
    done
  done
done
