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
# Runs the benchmarks FILTER names, REPS repetitions; prints one line per repetition: PREFIX,
# the run's name, then the fields named (counters or times).
bench_lines() {
  local filter=$1 repetitions=$2 prefix=$3; shift 3
  "$bin/hazard_step_bench" --benchmark_filter="$filter" --benchmark_repetitions="$repetitions" \
    --benchmark_enable_random_interleaving=true --benchmark_format=json --benchmark_out="$json" > /dev/null 2>&1
  python3 - "$json" "$prefix" "$@" <<'PY'
import json, sys
path, prefix, fields = sys.argv[1], sys.argv[2], sys.argv[3:]
for b in json.load(open(path))["benchmarks"]:
    if b.get("run_type") == "iteration":
        print(prefix, b["run_name"], " ".join(f"{b[f]:.5f}" for f in fields))
PY
}
for round in $(seq "$rounds"); do
  echo "# round $round $(date -u +%T)"
  bench_lines BM_step_cuda "$reps" rep real_time
  python3 bench/torch/csan_two_stream_step.py
  python3 bench/torch/csan_two_stream_step.py --csan
done
echo "# paired $(date -u +%T)"
bench_lines BM_paired_cuda "${PAIRED_REPS:-40}" paired tracked_over_untracked tracked_us untracked_us
rm -f "$json"
