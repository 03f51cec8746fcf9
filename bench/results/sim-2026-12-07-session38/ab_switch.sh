#!/usr/bin/env bash
# A/B of the switch iteration's host time: ROUNDS rounds, each replaying every trace with each
# binary in turn (10 iterations), printing the allocator's ns per operation of iterations 1-4,
# the mean of 2-10 and the 10 iterations' device calls over one iteration's.
#   usage: TRACES=dir bench/results/sim-2026-12-07-session38/ab_switch.sh ROUNDS BINARY...
set -euo pipefail
rounds=$1; shift
traces=${TRACES:-build/traces}
for round in $(seq "$rounds"); do
  for t in inf10_s1 inf10_s2 inf10_s3 inf10_s5 inf10_s2_st4 inf2_s1; do
    for binary in "$@"; do
      "$binary" replay "$traces/$t.csv.gz" --iterations 10 --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
ns = [p['allocator_ns_per_op'] for p in d['per_iteration']]
calls = [p['device_calls'] for p in d['per_iteration']]
print('round $round %-14s %-10s it1-4 %s mean2-10 %.1f calls10/1 %.4f' % ('$t', '$(basename "$binary")',
      ' '.join('%.0f' % x for x in ns[:4]), sum(ns[1:]) / 9, sum(calls) / calls[0]))"
    done
  done
done
