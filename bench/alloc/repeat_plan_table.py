#!/usr/bin/env python3
# The table of bench/alloc/repeat_plan_matrix.sh's JSON lines (one argument: the file).
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
single={}
failed=[r for r in rows if 'error' in r['run']]
rows=[r for r in rows if 'error' not in r['run']]
for r in failed: print(f"failed: {r['trace']} {r['conf']} {r['iters']} iterations: {r['run']['error']}")
for r in rows:
    if r['iters']==1: single[(r['trace'],r['conf'])]=r['run']['first_device_calls_per_iteration']
print("| trace | repeat_plan | calls, 1 iteration | calls, 10 iterations | 10 / 1 | calls per iteration 1..10 | host syncs per iteration 1..10 | reserved/live per iteration 1..10 | ns/op iteration 1 / 10 | plan: activations, derailments, arena MiB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if r['iters']!=10: continue
    d=r['run']; its=d['per_iteration']
    tot=sum(i['device_calls'] for i in its); one=single.get((r['trace'],r['conf']), float('nan'))
    calls=" ".join(str(i['device_calls']) for i in its)
    syncs=" ".join(str(i['host_syncs']) for i in its)
    rl=" ".join(f"{i['peak_reserved_bytes']/i['peak_live_bytes']:.3f}" for i in its)
    print(f"| {r['trace'].replace('.alloc.csv.gz','').replace('.csv.gz','')} | {r['conf'].split(':')[1]} | {one:.0f} | {tot} | {tot/one:.2f} | {calls} | {syncs} | {rl} | {its[0]['ns_per_op']:.0f} / {its[-1]['ns_per_op']:.0f} | {d['plan_activations']}, {d['plan_derailments']}, {d['plan_arena_bytes']/2**20:.0f} |")
