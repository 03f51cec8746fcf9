"""Per trace, mode and resource of replay_bench.sh's JSON lines: host time in the allocator over
c10's in the same file (steady: mean of iterations 2..N; last: iteration N), device calls and
reserved/live.

    python3 bench/alloc/replay_ratios.py RUN.jsonl [MORE.jsonl ...]
"""
import json,sys
for f in sys.argv[1:]:
    rows={}
    for l in open(f):
        try: d=json.loads(l)
        except: continue
        if 'trace' not in d: continue
        rows[(d['trace'].split('/')[-1][:16], 'busy' if d['busy'] else 'idle', d['resource'])]=d
    print(f)
    for (t,m,r),d in sorted(rows.items()):
        c=rows.get((t,m,'c10'))
        if not c: continue
        print(f"{t:16} {m:4} {r:36} steady {d['steady_allocator_ns_per_op']:8.1f} /c10 {d['steady_allocator_ns_per_op']/c['steady_allocator_ns_per_op']:.3f} last/c10 {d['last_allocator_ns_per_op']/c['last_allocator_ns_per_op']:.3f} calls1 {d['first_device_calls_per_iteration']} steadycalls {d['steady_device_calls_per_iteration']} syncs {d['steady_syncs_per_iteration']} r/l {d['first_reserved_over_live']}/{d['steady_reserved_over_live']}")
