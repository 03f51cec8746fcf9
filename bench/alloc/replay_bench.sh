#!/usr/bin/env bash
# The replay benchmark's whole matrix, on the GPU machine: each trace replayed as a training loop
# through each resource (streamsafe's policies, c10 native and expandable, cudaMallocAsync), idle
# and busy, and the multi-stream trace also on a tight device, where caches must be shared. One
# process per run: c10 reads PYTORCH_CUDA_ALLOC_CONF once, at its init, and a crash or a
# timeout costs one line, not the matrix. Raw JSON lines to OUT (the first line says what ran:
# commit, command, GPU, PyTorch), the table of docs/allocator.md to OUT.md.
#   usage: bench/alloc/replay_bench.sh OUT.jsonl
#   environment (defaults in brackets):
#     REPLAY_BENCH  the binary [.device-build/bin/replay_bench, as bench/gpu_build_torch_bench.sh makes it]
#     TRACE_DIR     where the traces are, and the generated ones are made [.device-build/traces]
#     RESNET_TRACE  [the first of TRACE_DIR/, shared/data/ and ../shared/data/resnet50_train.alloc.csv.gz]
#     TRACES        the traces to replay [ResNet-50, bench/traces/gpt2_train, inference seed 1, and seed 1 on
#                   4 streams with record_stream]
#     RESOURCES     [streamsafe:remap streamsafe:settle streamsafe:map_new c10 c10_expandable
#                   cuda_async]
#     MODES         idle, busy, tight (idle with --headroom HEADROOM) [idle busy tight]
#     TIGHT_TRACES  the traces the tight mode replays [the 4-stream one]
#     HEADROOM [1.5]  ITERATIONS [10]  REQUESTS [2: inference requests per generated trace, 18,632 ops]
#     ROUNDS [1]    the whole matrix again, each line marked with its round, so that a resource and
#                   its peer run side by side in every round (bench/alloc/replay_ratios.py takes
#                   the median over the rounds)
#     BACKEND [cuda: streamsafe's backend]  RUN_TIMEOUT [180 s per run]
set -uo pipefail
out=${1:?usage: bench/alloc/replay_bench.sh OUT.jsonl}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${REPLAY_BENCH:-$here/.device-build/bin/replay_bench}
traces=${TRACE_DIR:-$here/.device-build/traces}
export LD_LIBRARY_PATH="$here/.device-build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export STREAMSAFE_COMMIT=${STREAMSAFE_COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$traces"

requests=${REQUESTS:-2}
single=$traces/inference_seed1_requests$requests.csv.gz
streams4=$traces/inference_seed1_requests${requests}_streams4.csv.gz
[ -f "$single" ] || python3 "$here/scripts/gen_inference_trace.py" "$single" --requests "$requests" --seed 1
[ -f "$streams4" ] ||
  python3 "$here/scripts/gen_inference_trace.py" "$streams4" --requests "$requests" --seed 1 --streams 4
resnet=${RESNET_TRACE:-}
for candidate in "$traces" "$here/shared/data" "$here/../shared/data"; do
  [ -n "$resnet" ] || [ ! -f "$candidate/resnet50_train.alloc.csv.gz" ] || resnet=$candidate/resnet50_train.alloc.csv.gz
done
resnet=${resnet:-$traces/resnet50_train.alloc.csv.gz}  # missing: its runs say so
read -r -a trace_list <<< "${TRACES:-$resnet $here/bench/traces/gpt2_train.alloc.csv.gz $single $streams4}"
read -r -a tight_list <<< "${TIGHT_TRACES:-$streams4}"
read -r -a resources <<< "${RESOURCES:-streamsafe:remap streamsafe:settle streamsafe:map_new c10 c10_expandable cuda_async}"

json_text() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
torch=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
echo "{\"bench\":\"replay_bench.sh\",\"commit\":$(json_text "$STREAMSAFE_COMMIT"),\"command\":$(json_text "$0 $*"),"\
"\"date\":\"$(date -u +%FT%TZ)\",\"gpu\":$(json_text "${gpu:-none}"),\"torch\":$(json_text "${torch:-none}")}" > "$out"

# One run: its JSON line, or one saying how the process ended when it printed none.
run() {
  local trace=$1 resource=$2 mode=$3 flags=() conf=()
  case $mode in
    busy) flags=(--busy) ;;
    tight) flags=(--headroom "${HEADROOM:-1.5}") ;;
  esac
  case $resource in
    c10_expandable) conf=(env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
    *) conf=(env -u PYTORCH_CUDA_ALLOC_CONF) ;;
  esac
  local line rc
  line=$("${conf[@]}" timeout "${RUN_TIMEOUT:-180}" "$bin" "$trace" --resource "$resource" --backend "${BACKEND:-cuda}" \
    --iterations "${ITERATIONS:-10}" "${flags[@]}" --json 2>/tmp/replay_bench.err | tail -1)
  rc=${PIPESTATUS[0]}
  if [ -z "$line" ]; then
    local how="exit $rc"
    [ "$rc" -eq 124 ] && how="timed out after ${RUN_TIMEOUT:-180} s"
    [ "$rc" -gt 128 ] && how="killed by signal $((rc - 128))"
    line="{\"bench\":\"replay_bench\",\"trace\":$(json_text "$(basename "$trace")"),\"resource\":\"$resource\","\
"\"error\":$(json_text "$how: $(tail -c 300 /tmp/replay_bench.err)")}"
  fi
  echo "{\"round\":$round,\"mode\":\"$mode\",${line#\{}" | tee -a "$out" | cut -c1-240
}

for round in $(seq 1 "${ROUNDS:-1}"); do
  for trace in "${trace_list[@]}"; do
    for mode in ${MODES:-idle busy tight}; do
      if [ "$mode" = tight ] && [[ " ${tight_list[*]} " != *" $trace "* ]]; then continue; fi
      for resource in "${resources[@]}"; do run "$trace" "$resource" "$mode"; done
    done
  done
done
python3 "$here/bench/alloc/replay_table.py" "$out" > "$out.md"
echo "table: $out.md"
