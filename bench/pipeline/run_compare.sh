#!/usr/bin/env bash
# The comparison benchmark on the GPU with its defaults: the pipeline, one stream, the
# four-stream loop and the prefetcher in copy_bound, sm_bound and balanced, each variant checked
# under the hazard engine first (--check), then 5 interleaved repetitions of 200 steps. Writes to
# DIR: compare.txt (the table), compare.json (every config x variant with each repetition's
# figures), machine.txt and command.txt.
#
#   bench/pipeline/run_compare.sh DIR [extra pipeline_compare_bench flags]
#
# The binary: $PIPELINE_COMPARE_BENCH, else .device-build/bin (bench/gpu_build_on_device.sh puts
# it there), else build/cuda.
set -euo pipefail
out=${1:?usage: bench/pipeline/run_compare.sh DIR [flags]}
shift
bin=${PIPELINE_COMPARE_BENCH:-}
for candidate in .device-build/bin/pipeline_compare_bench build/cuda/bench/pipeline/pipeline_compare_bench; do
  [[ -z "$bin" && -x "$candidate" ]] && bin=$candidate
done
[[ -n "$bin" ]] || { echo "run_compare.sh: no pipeline_compare_bench (build it: bench/gpu_build_on_device.sh)" >&2; exit 1; }
export LD_LIBRARY_PATH="$PWD/.device-build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1 || true
  git log -1 --format='commit: %H %s' 2>/dev/null || true
} > "$out/machine.txt"
args=(--backend cuda --check --json-out "$out/compare.json" "$@")
echo "$bin ${args[*]}" > "$out/command.txt"
start=$(date +%s)
"$bin" "${args[@]}" | tee "$out/compare.txt"
echo "run_compare.sh: $(( $(date +%s) - start )) s; $out/compare.json, $out/compare.txt"
