#!/usr/bin/env bash
# Inference traces replayed 10 times by each binary given: busy (twice: sim's threaded mode is
# not deterministic) and on a tight device. Device calls of 10 iterations over one, reserved/live
# of the first iteration, the highest of iterations 2-10, of 3-10, and the last.
#   TRACES=.device-build/traces bash bench/results/sim-2026-12-07-session43/busy_tight.sh BIN...
set -u
for t in inf10_s1 inf10_s2 inf10_s4 inf2_s1 inf10_s1_st4 inf10_s2_st4; do
  for opt in "--busy" "--busy" "--headroom 1.1"; do
    for bin in "$@"; do
      timeout 300 "$bin" replay "$TRACES/$t.csv.gz" --iterations 10 $opt --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
c = [p['device_calls'] for p in d['per_iteration']]
r = [p['peak_reserved_bytes'] / p['peak_live_bytes'] for p in d['per_iteration']]
print('%-13s %-15s %-8s calls 10/1 %.4f  reserved/live first %.4f  2-10 at most %.4f  3-10 at most %.4f  last %.4f  calls %s' % (
    sys.argv[1], sys.argv[2], sys.argv[3], sum(c) / c[0], r[0], max(r[1:]), max(r[2:]), r[-1], c[:4]))" "$t" "$opt" "$(basename "$bin")" ||
        echo "$t $opt $(basename "$bin"): the replay failed"
    done
  done
done
