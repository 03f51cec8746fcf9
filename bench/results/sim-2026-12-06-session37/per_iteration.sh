#!/usr/bin/env bash
# Replays one trace as a 10-iteration loop with each CLI given, in alternating order ROUNDS times
# (default 3), and prints per iteration: device calls, host synchronizations, peak reserved over
# peak live, and the allocator's ns per operation.
#   usage: [ROUNDS=n] [BACKEND=sim|cuda] per_iteration.sh TRACE STREAMSAFE_BINARY...
set -euo pipefail
trace=$1; shift
for round in $(seq "${ROUNDS:-3}"); do
  for binary in "$@"; do
    "$binary" replay "$trace" --backend "${BACKEND:-sim}" --iterations 10 --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
it = d['per_iteration']
print('round %s %s' % (sys.argv[1], sys.argv[2]))
print('  calls      ', [p['device_calls'] for p in it])
print('  syncs      ', [p['host_syncs'] for p in it])
print('  reserved/live', ['%.4f' % (p['peak_reserved_bytes'] / p['peak_live_bytes']) for p in it])
ns = [p['allocator_ns_per_op'] for p in it]
print('  alloc ns/op', ['%.0f' % x for x in ns], ' mean 2-10 %.1f' % (sum(ns[1:]) / len(ns[1:])))" "$round" "$binary"
  done
done
