#!/usr/bin/env bash
# Inference seed 2 as a 10-iteration loop on a tight sim device (replay --headroom H: only H
# times the trace's peak live bytes stay free), with each CLI given: calls per iteration, calls
# over 10 iterations against 1, synchronizations per iteration, plan activations.
#   usage: headroom.sh TRACE STREAMSAFE_BINARY...
set -euo pipefail
trace=$1; shift
for h in 1.04 1.05 1.06 1.1; do
  for binary in "$@"; do
    "$binary" replay "$trace" --iterations 10 --headroom $h --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
c = [p['device_calls'] for p in d['per_iteration']]
print('headroom %s %-10s calls %s 10/1 %.4f syncs %s activations %d' % (sys.argv[1], sys.argv[2], c, sum(c) / c[0],
      [p['host_syncs'] for p in d['per_iteration']], d['plan_activations']))" $h "$(basename "$binary")"
  done
done
