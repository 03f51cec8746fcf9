#!/usr/bin/env python3
"""The README's table from c10_rounds_device.sh's rounds.jsonl: per trace, mode and streamsafe
resource, the mean of iterations 2-10 over c10's in the same round (median and range over the
rounds), iteration 10 over c10's, ns/op in iterations 2, 3 and 10, device calls in 10 iterations
over one, and reserved/live of the first iteration and of iterations 2-10.

    python3 table.py run1/rounds.jsonl
"""
import json
import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    key = (d["trace"].split("/")[-1].split(".")[0], "busy" if d["busy"] else "idle", d["resource"])
    runs.setdefault(key, {})[d["round"]] = d
print("| trace | mode | resource | rounds | mean of 2-10 / c10, median (range) | iteration 10 / c10 |"
      " ns/op: iteration 2 / 3 / 10 (c10 iteration 10) | calls 10/1 | reserved/live first / 2-10 |")
print("|---|---|---|---|---|---|---|---|---|")
for (trace, mode, res), rounds in sorted(runs.items()):
    if res == "c10":
        continue
    peer = runs[(trace, mode, "c10")]
    common = [r for r in rounds if r in peer]
    steady = [rounds[r]["steady_allocator_ns_per_op"] / peer[r]["steady_allocator_ns_per_op"] for r in common]
    last = [rounds[r]["last_allocator_ns_per_op"] / peer[r]["last_allocator_ns_per_op"] for r in common]
    it = lambda i, runs_: statistics.median(runs_[r]["per_iteration_allocator_ns_per_op"][i] for r in common)
    d = rounds[common[0]]
    calls = d["per_iteration_device_calls"]
    spread = f" ({min(steady):.3f}-{max(steady):.3f})" if len(steady) > 1 else ""
    print(f"| {trace} | {mode} | {res} | {len(common)} | {statistics.median(steady):.3f}{spread} |"
          f" {statistics.median(last):.3f} | {it(1, rounds):.0f} / {it(2, rounds):.0f} / {it(9, rounds):.0f}"
          f" ({it(9, peer):.0f}) | {sum(calls) / calls[0]:.4f} |"
          f" {d['first_reserved_over_live']:.4f} / {d['steady_reserved_over_live']:.4f} |")
