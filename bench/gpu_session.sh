#!/usr/bin/env bash
# Runs the GPU test suites, the demo and the benchmarks on a machine with a GPU, from binaries
# built elsewhere (bench/stage_gpu_binaries.sh) and carried in .device-build/. Every output goes
# to $OUT (the device tool brings it back); results are then committed under bench/results/.
#   usage: bench/gpu_session.sh [PART...]   (parts: tests demo pipeline, or BENCH for bin/BENCH_bench; default: tests demo runtime alloc hazard_step monitor_collector)
set -uo pipefail
bin=.device-build/bin
export LD_LIBRARY_PATH="$PWD/.device-build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# The device tool brings back at most 8 files, so results are gathered here and packed into one.
out=$(mktemp -d /tmp/streamsafe-gpu.XXXX)
parts=${*:-tests demo runtime alloc hazard_step monitor_collector}
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
  lscpu | grep -E "Model name|^CPU\(s\)"
  git log -1 --format='commit: %H %s' 2>/dev/null || true
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

for part in $parts; do
  case $part in
    tests)
      # The suites with cuda variants (the others are CPU-only and bake source paths in).
      for name in runtime_semantics_test runtime_sim_scheduler_test runtime_threaded_test runtime_observer_test runtime_adopt_stream_test \
                  alloc_rules_test alloc_reuse_test alloc_lifetime_test alloc_soak_test alloc_thread_stress_test alloc_repeat_plan_test \
                  hazard_tracker_tests hazard_tracker_query_tests hazard_tracked_allocator_tests \
                  hazard_tracker_threaded_tests monitor_collector_tests monitor_cupti_backoff_test \
                  pipeline_ordering_test pipeline_errors_test; do
        t="$bin/$name"
        [ -x "$t" ] || continue
        name=$(basename "$t")
        timeout "${TEST_TIMEOUT:-300}" "$t" --gtest_brief=1 > "$out/test_$name.txt" 2>&1
        echo "$name: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/test_$name.txt" | tr '\n' ' ')"
      done ;;
    demo)
      "$bin/streamsafe" --version > "$out/demo.txt" 2>&1
      "$bin/streamsafe" demo --backend cuda --trials 20 --out "$out" >> "$out/demo.txt" 2>&1
      for seed in 1 2 3; do "$bin/streamsafe" demo --backend cuda --json --trials 20 --seed $seed --out /tmp >> "$out/demo.txt" 2>&1; done
      tail -4 "$out/demo.txt" ;;
    pipeline)
      # The stage pipeline's synthetic training step in each config: checked, then measured.
      for config in copy_bound sm_bound balanced; do
        "$bin/streamsafe" pipeline --backend cuda --config $config --steps 200 --check --json --out "$out/pipeline-$config" \
          > "$out/pipeline-$config.json" 2> "$out/pipeline-$config.err"
        echo "pipeline $config: exit $? $(cat "$out/pipeline-$config.json")"
      done ;;
    *)
      [ -x "$bin/${part}_bench" ] || { echo "no ${part}_bench"; continue; }
      # Interleaved repetitions: ours and the raw calls see the same machine state.
      "$bin/${part}_bench" --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
        --benchmark_report_aggregates_only=true ${BENCH_ARGS:-} \
        --benchmark_out="$out/${part}_bench.json" --benchmark_out_format=json > "$out/${part}_bench.txt" 2>&1
      echo "${part}_bench: exit $?"; grep -E "_median|ERROR" "$out/${part}_bench.txt" | head -60 ;;
  esac
done

label=$(echo "$parts" | tr ' ' '-')
if [ -n "${OUT:-}" ]; then
  tar -czf "$OUT/gpu-session-$label.tar.gz" -C "$out" .
  echo "results: \$OUT/gpu-session-$label.tar.gz"
else
  echo "results: $out"
fi
