#!/usr/bin/env bash
# On the GPU machine: the two-stream step, ours (bench/hazard two_stream_step_bench: untracked,
# tracker off, report, enforce) and PyTorch's (untracked, CSAN), alternated ROUNDS times in one
# run so that both see the same host. Writes raw output to $1 (default: stdout).
set -uo pipefail
rounds=${ROUNDS:-5}
bin=${BIN:-.device-build/bin}
export LD_LIBRARY_PATH="$PWD/.device-build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for round in $(seq "$rounds"); do
  echo "# round $round $(date -u +%T)"
  "$bin/hazard_step_bench" --benchmark_filter=cuda --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true 2>&1 | grep -E "median|stddev"
  python3 bench/torch/csan_two_stream_step.py
  python3 bench/torch/csan_two_stream_step.py --csan
done
