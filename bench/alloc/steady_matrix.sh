#!/usr/bin/env bash
# Replays each allocation trace as a training loop (streamsafe replay --iterations) under each
# segment policy and prints one JSON line per run, then a table: first-iteration and
# steady-state device calls, host syncs, ns per op and reserved/live.
# Traces: ResNet-50 (shared/data), the generated variable-length inference traces, seeds 1 to 3,
# and seed 1 on 4 streams with record_stream (made if missing).
#   usage: bench/alloc/steady_matrix.sh STREAMSAFE_BINARY [BACKEND] [TRACE_DIR]
#   environment: ITERATIONS (10), POLICIES (confs, comma-free words below), BUSY (set: --busy)
source "$(dirname "$0")/trace_setup.sh"
iterations=${ITERATIONS:-10}
conf_of() {
  case $1 in
    fixed) echo "segments:fixed" ;;
    *) echo "expandable_growth:$1" ;;
  esac
}
runs=$(mktemp)
for trace in "$resnet" "$traces"/inference_seed{1,2,3}.csv.gz "$traces/inference_seed1_streams4.csv.gz"; do
  for policy in ${POLICIES:-remap map_new fixed settle}; do
    line=$("$binary" replay "$trace" --backend "$backend" --conf "$(conf_of "$policy")" --iterations "$iterations" \
      ${BUSY:+--busy} --json 2>&1 | tail -1) || line="{\"error\":\"$(echo "$line" | tr -d '"\n' | cut -c1-200)\"}"
    echo "{\"trace\":\"$(basename "$trace")\",\"policy_name\":\"$policy\",\"run\":$line}" | tee -a "$runs"
  done
done
python3 - "$runs" <<'PY'
import json, sys
print("| trace | policy | first: device calls | steady: device calls / iter | steady: host syncs / iter "
      "| first ns/op | steady ns/op | first reserved/live | steady reserved/live |")
print("|---|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    d = r["run"]
    if "error" in d:
        print(f"| {r['trace']} | {r['policy_name']} | failed: {d['error']} |||||||")
        continue
    print(f"| {r['trace']} | {r['policy_name']} | {d['first_device_calls_per_iteration']:.0f} | "
          f"{d.get('steady_device_calls_per_iteration', 0):.1f} | {d.get('steady_syncs_per_iteration', 0):.1f} | "
          f"{d['first_ns_per_op']:.1f} | {d.get('steady_ns_per_op', 0):.1f} | {d['first_reserved_over_live']:.4f} | "
          f"{d.get('steady_reserved_over_live', 0):.4f} |")
PY
rm -f "$runs"
