#!/usr/bin/env bash
# Per-iteration device calls, host synchronizations and reserved/live of the 4-stream inference
# traces under a tight device (--headroom 1.1), without the repeat plan, and busy, for each CLI given.
#   usage: TRACES=dir bench/results/sim-2026-12-05-session33/stream_variants.sh STREAMSAFE_BINARY... > out.txt
set -euo pipefail
traces=${TRACES:-build/traces}
for trace in inf10_s1_st4 inf10_s2_st4; do
  for variant in "--iterations 6 --headroom 1.1" "--iterations 6 --conf repeat_plan:off" "--iterations 4 --busy"; do
    echo "== $trace $variant"
    for binary in "$@"; do
      # shellcheck disable=SC2086
      "$binary" replay "$traces/$trace.csv.gz" --json $variant 2>/dev/null | python3 -c "
import json, sys
it = json.load(sys.stdin)['per_iteration']
print('%-8s calls %s syncs %s r/l %s' % (sys.argv[1], [p['device_calls'] for p in it], [p['host_syncs'] for p in it],
      [round(p['peak_reserved_bytes'] / p['peak_live_bytes'], 3) for p in it]))" "$(basename "$binary")"
    done
  done
done
