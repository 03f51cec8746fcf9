#!/usr/bin/env bash
# ROUNDS alternating rounds: each trace replayed for 3 iterations by each timed binary (built with
# switch_timers_patch.py applied), printing one line of the switch's timers per run.
#   usage: TRACES=dir switch_timers.sh ROUNDS BINARY...
set -euo pipefail
rounds=$1; shift
for round in $(seq "$rounds"); do
  for t in inf10_s1 inf10_s2 inf10_s5 inf10_s1_st4; do
    for binary in "$@"; do
      echo "round $round $t $(basename "$binary") $("$binary" replay "${TRACES:-build/traces}/$t.csv.gz" --iterations 3 2>&1 >/dev/null | grep -v ' 0\.[0-9][0-9] ms' | tr '\n' ' ')"
    done
  done
done
