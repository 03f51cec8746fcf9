#!/usr/bin/env bash
# The switch's host time, two builds side by side on sim: for each trace, RUNS pairs of
# `streamsafe replay TRACE --iterations 10 --json`, alternating BASE and NEW, and the medians of
# the allocator's ns per operation in iteration 2 (the switch), over iterations 2-10, and in
# iteration 10.
#   usage: BASE=old/streamsafe NEW=new/streamsafe TRACES=dir ab_switch.sh [RUNS] TRACE_NAME...
set -euo pipefail
runs=${1:?usage: ab_switch.sh RUNS TRACE_NAME...}; shift
for t in "$@"; do
  for i in $(seq "$runs"); do
    for which in base new; do
      if [ $which = base ]; then bin=$BASE; else bin=$NEW; fi
      "$bin" replay "$TRACES/$t.csv.gz" --iterations 10 --json 2>/dev/null | python3 -c "
import json, sys
a = [x['allocator_ns_per_op'] for x in json.load(sys.stdin)['per_iteration']]
print('$which %.1f %.1f %.1f' % (a[1], sum(a[1:]) / 9, a[9]))"
    done
  done | python3 -c "
import statistics as st, sys
rows = {}
for line in sys.stdin:
    which, *values = line.split()
    rows.setdefault(which, []).append([float(v) for v in values])
print('$t: ' + ' | '.join('%s iteration 2 %.0f, 2-10 %.1f, 10 %.1f' % (w, st.median(r[0] for r in rows[w]),
      st.median(r[1] for r in rows[w]), st.median(r[2] for r in rows[w])) for w in ('base', 'new')))"
done
