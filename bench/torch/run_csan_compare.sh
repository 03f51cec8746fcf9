#!/usr/bin/env bash
# On the GPU machine: the two-stream step, ours (bench/hazard two_stream_step_bench: untracked,
# tracker off, report, enforce; REPS repetitions each, randomly interleaved) and PyTorch's
# (untracked, CSAN), alternated ROUNDS times in one run so that both see the same host. Then the
# paired form (blocks of untracked and tracked steps alternated in one process; PAIRED_REPS
# repetitions). Prints one line per repetition ("rep NAME US", "paired NAME RATIO") and
# PyTorch's JSON lines; then
# bench/torch/summarize_csan_compare.py turns the output into medians, ratios and their spread.
set -uo pipefail
rounds=${ROUNDS:-5}
reps=${REPS:-15}
bin=${BIN:-.device-build/bin}
export LD_LIBRARY_PATH="$PWD/.device-build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
json=$(mktemp)
for round in $(seq "$rounds"); do
  echo "# round $round $(date -u +%T)"
  "$bin/hazard_step_bench" --benchmark_filter=BM_step_cuda --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true --benchmark_format=json --benchmark_out="$json" > /dev/null 2>&1
  python3 - "$json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "iteration":
        print(f"rep {b['run_name']} {b['real_time']:.3f}")
PY
  python3 bench/torch/csan_two_stream_step.py
  python3 bench/torch/csan_two_stream_step.py --csan
done
echo "# paired $(date -u +%T)"
"$bin/hazard_step_bench" --benchmark_filter=BM_paired_cuda --benchmark_repetitions="${PAIRED_REPS:-40}" \
  --benchmark_enable_random_interleaving=true --benchmark_format=json --benchmark_out="$json" > /dev/null 2>&1
python3 - "$json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "iteration":
        print(f"paired {b['run_name']} {b['tracked_over_untracked']:.5f} "
              f"{b['tracked_us']:.3f} {b['untracked_us']:.3f}")
PY
rm -f "$json"
