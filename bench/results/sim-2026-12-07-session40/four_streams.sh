# The 4-stream inference traces replayed 10 times by each binary given, idle, busy (twice: sim's
# threaded mode is not deterministic) and on a tight device: device calls of 10 iterations over
# one, first-iteration reserved/live, the highest of iterations 2-10 and the last.
#   TRACES=.device-build/traces bash bench/results/sim-2026-12-07-session40/four_streams.sh BIN...
set -u
for t in inf10_s2_st4 inf10_s1_st4; do
  for opt in "" "--busy" "--busy" "--headroom 1.1"; do
    for bin in "$@"; do
      timeout 300 "$bin" replay "$TRACES/$t.csv.gz" --iterations 10 $opt --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
c = [p['device_calls'] for p in d['per_iteration']]
print('%-13s %-15s %-10s calls 10/1 %.4f  reserved/live first %.4f  iterations 2-10 at most %.4f  last %.4f  calls %s' % (
    sys.argv[1], sys.argv[2] or 'idle', sys.argv[3], sum(c) / c[0], d['first_reserved_over_live'],
    d['steady_reserved_over_live'], d['last_reserved_over_live'], c[:4]))" "$t" "$opt" "$(basename "$bin")"
    done
  done
done
