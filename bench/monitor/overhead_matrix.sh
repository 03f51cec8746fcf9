#!/usr/bin/env bash
# Where the collector's overhead comes from: runs the cuda cases of monitor_collector_bench
# (fixed-work step: off, always-on, always-on kernels only, full trace, step-sampled,
# time-sampled; timer-spin step: off, always-on, full trace) once per diagnostic setting of
# docs/monitor.md ("Diagnostic settings"), each in its own process, then prints the medians side
# by side. About 3-4 minutes on the H200 with the defaults (the time-sampled case runs at least
# 1 s per repetition whatever MIN_TIME says, so that it sees many sampling windows).
#
# The final measurement, more repetitions of the defaults only (about 1-1.5 minutes):
#   VARIANTS=default REPETITIONS=10 MIN_TIME=0.3 bash bench/monitor/overhead_matrix.sh
#
#   usage: bench/monitor/overhead_matrix.sh [BIN_DIR] [OUT_DIR]
#     BIN_DIR  where monitor_collector_bench is (default .device-build/bin, as staged by
#              bench/stage_gpu_binaries.sh; its ../lib is added to LD_LIBRARY_PATH)
#     OUT_DIR  one VARIANT.txt and VARIANT.json per variant, and table.txt (default: a new
#              folder under /tmp). With $OUT set (the device tool, which brings back only a few
#              files) they are also packed into $OUT/overhead_matrix.tar.gz, table.txt beside it.
#   env: MIN_TIME (seconds per repetition, a plain number; default 0.2), REPETITIONS (default 5),
#        VARIANTS (names from the list below, space-separated; default all), VARIANT_TIMEOUT
#        (seconds one variant may run; default from REPETITIONS and MIN_TIME, at least 150)
set -uo pipefail

bin=${1:-.device-build/bin}
out=${2:-$(mktemp -d /tmp/overhead_matrix.XXXX)}
min_time=${MIN_TIME:-0.2}
repetitions=${REPETITIONS:-5}
# Per repetition: 8 cases of about 1.4 x MIN_TIME (Google Benchmark's sizing margin) and the
# time-sampled case's 1.4 s; twice that for the first repetition's sizing and CUPTI, plus 60 s.
variant_timeout=${VARIANT_TIMEOUT:-$(awk -v r="$repetitions" -v t="$min_time" \
  'BEGIN { s = 60 + 2 * r * (8 * 1.4 * t + 1.4); if (s < 150) s = 150; printf "%d", s }')}
bench="$bin/monitor_collector_bench"
[ -x "$bench" ] || { echo "overhead_matrix: no $bench (build or stage it first)" >&2; exit 1; }
mkdir -p "$out"
export LD_LIBRARY_PATH="$(cd "$bin/.." && pwd)/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
# Each variant sets what it changes; nothing is inherited from the caller.
unset STREAMSAFE_CUPTI_KINDS STREAMSAFE_CUPTI_CLOCK STREAMSAFE_COLLECTOR_OBSERVER

# name: the diagnostic settings it runs with (docs/monitor.md)
declare -A settings=(
  [default]=""
  [clock_cupti]="STREAMSAFE_CUPTI_CLOCK=cupti"
  [kinds_kernel]="STREAMSAFE_CUPTI_KINDS=kernel"
  [kinds_memcpy]="STREAMSAFE_CUPTI_KINDS=memcpy"
  [kinds_memset]="STREAMSAFE_CUPTI_KINDS=memset"
  [kinds_none]="STREAMSAFE_CUPTI_KINDS=none"
  [observer_off]="STREAMSAFE_COLLECTOR_OBSERVER=off"
)
variants=${VARIANTS:-default clock_cupti kinds_kernel kinds_memcpy kinds_memset kinds_none observer_off}

run_variant() {
  local name=$1
  # shellcheck disable=SC2086  # the settings are words on purpose
  env ${settings[$name]} timeout "$variant_timeout" "$bench" --benchmark_filter=cuda \
    --benchmark_repetitions="$repetitions" --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true --benchmark_min_time="$min_time" \
    --benchmark_out="$out/$name.json" --benchmark_out_format=json > "$out/$name.txt" 2>&1
  echo "$name (${settings[$name]:-defaults}): exit $?, $SECONDS s so far"
}

for name in $variants; do
  [ -n "${settings[$name]+set}" ] || { echo "overhead_matrix: unknown variant $name" >&2; continue; }
  run_variant "$name"
done

# Medians of step time (us) per variant; +x% against the same step kind's off case of that variant.
python3 - "$out" $variants <<'PY' | tee "$out/table.txt"
import json, os, re, sys

out, variants = sys.argv[1], sys.argv[2:]
cases = [("fixed_work", ["off", "always_on", "always_on_kernels", "full_trace", "sampled", "time_sampled"]),
         ("timer_spin", ["off", "always_on", "full_trace"])]

def medians(path):
    found = {}
    try:
        with open(path) as f:
            for b in json.load(f).get("benchmarks", []):
                if b.get("aggregate_name") == "median" and not b.get("error_occurred"):
                    # "cuda_fixed_work/time_sampled/min_time:1.000/real_time" -> "cuda_fixed_work/time_sampled"
                    found[re.sub(r"/(min_time:[^/]*|real_time)", "", b["run_name"])] = b
    except (OSError, ValueError) as e:
        print(f"# {path}: {e}")
    return found

def cell(found, work, mode):
    b = found.get(f"cuda_{work}/{mode}")
    if b is None:
        return "-"
    off = found.get(f"cuda_{work}/off")
    if mode == "off" or off is None:
        return f"{b['real_time']:.1f}"
    return f"{b['real_time']:.1f} ({100 * (b['real_time'] / off['real_time'] - 1):+.1f}%)"

def kernel_us(found, work):
    b = found.get(f"cuda_{work}/always_on")
    return f"{b['compute_us_per_step']:.1f}" if b and "compute_us_per_step" in b else "-"

def time_fraction(found):
    b = found.get("cuda_fixed_work/time_sampled")
    return f"{100 * b['sampled_fraction']:.2f}%" if b and "sampled_fraction" in b else "-"

header = ["variant"] + [f"{'fixed' if w == 'fixed_work' else 'spin'} {m}" for w, modes in cases for m in modes] + ["fixed compute/step", "spin compute/step", "time_sampled fraction"]
rows = []
for v in variants:
    found = medians(os.path.join(out, v + ".json"))
    rows.append([v] + [cell(found, w, m) for w, modes in cases for m in modes] + [kernel_us(found, w) for w, _ in cases]
                + [time_fraction(found)])
widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
print("step time medians, us (overhead against off of the same step kind and variant);")
print("compute/step: the compute union per step as the always-on collector saw it, us;")
print("time_sampled fraction: the wall time inside sampling windows (1 ms every 100 ms: about 1%)")
for r in [header] + rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
PY
echo "raw output: $out/*.txt, $out/*.json"
if [ -n "${OUT:-}" ]; then
  tar -czf "$OUT/overhead_matrix.tar.gz" -C "$out" . && cp "$out/table.txt" "$OUT/overhead_matrix_table.txt"
  echo "packed: \$OUT/overhead_matrix.tar.gz, \$OUT/overhead_matrix_table.txt"
fi
