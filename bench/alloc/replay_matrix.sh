#!/usr/bin/env bash
# Replays the allocation traces under each growth policy and prints one table row per run:
# trace, policy, peak live, peak reserved, their ratio, device allocations, host ns per op.
# Traces: ResNet-50 (shared/data), the same repeated 4 times (a training loop's steady state),
# and the generated variable-length inference traces, seeds 1 to 3 (made if missing).
#   usage: bench/alloc/replay_matrix.sh STREAMSAFE_BINARY [BACKEND] [TRACE_DIR]
source "$(dirname "$0")/trace_setup.sh"
[ -f "$traces/resnet50_x4.csv.gz" ] || python3 "$here/scripts/repeat_trace.py" "$resnet" "$traces/resnet50_x4.csv.gz"
echo "| trace | policy | peak live MiB | peak reserved MiB | reserved/live | device allocations | ns/op |"
echo "|---|---|---|---|---|---|---|"
for trace in "$resnet" "$traces/resnet50_x4.csv.gz" "$traces"/inference_seed{1,2,3}.csv.gz; do
  for policy in ${POLICIES:-remap map_new}; do
    "$binary" replay "$trace" --backend "$backend" --conf "expandable_growth:$policy" --json |
      python3 -c "
import json, sys
d = json.load(sys.stdin)
print(f\"| {sys.argv[1]} | {sys.argv[2]} | {d['peak_live_bytes'] / 2**20:.1f} | {d['peak_reserved_bytes'] / 2**20:.1f} | \"
      f\"{d['reserved_over_live']:.4f} | {d['device_allocations']} | {d['ns_per_op']:.1f} |\")" "$(basename "$trace")" "$policy"
  done
done
