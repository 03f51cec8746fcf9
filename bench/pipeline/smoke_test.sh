#!/usr/bin/env bash
# The comparison benchmark on sim, 2 steps: exits 0 and prints every config x variant, in the
# table and in --json, and the hazard engine (always on for sim) finds nothing in any of them:
# the loops by hand are the fixed ones. No time is checked (sim times are host times).
set -euo pipefail
bench=$1
common=(--backend sim --steps 2 --reps 2 --warmup 1 --alone-steps 1)
table=$("$bench" "${common[@]}")
json=$("$bench" "${common[@]}" --json)
echo "$table"
status=0
for config in copy_bound sm_bound balanced; do
  grep -q "^$config on " <<<"$table" || { echo "missing config $config in the table"; status=1; }
  for variant in pipeline one_stream four_streams prefetcher; do
    grep -q "^$variant " <<<"$table" || { echo "missing variant $variant in the table"; status=1; }
    grep -q "\"config\":\"$config\",\"variant\":\"$variant\"" <<<"$json" \
      || { echo "missing $config x $variant in --json"; status=1; }
  done
done
objects=$(grep -c '"variant":' <<<"$json")
[ "$objects" -eq 12 ] || { echo "--json has $objects objects, not 12"; status=1; }
clean=$(grep -c '"checked":true,"hazards":0,' <<<"$json")
[ "$clean" -eq 12 ] || { echo "hazards in $((12 - clean)) of the 12 runs:"; grep -v '"hazards":0,' <<<"$json"; status=1; }
exit $status
