#!/usr/bin/env python3
"""Renders replay_bench JSON lines (bench/alloc/replay_bench.sh's OUT) as the markdown table of
docs/allocator.md, "Replay benchmark": one row per trace, mode and resource, with each steady
ns/op also as a fraction of c10's (native) on the same trace and mode.

    bench/alloc/replay_table.py OUT.jsonl [MORE.jsonl...] > OUT.md   (a matrix run in parts)
"""
import json
import sys

COLUMNS = ("trace", "mode", "resource", "ops / iter", "first ns/op", "steady ns/op", "steady / c10's",
           "steady ns/op in allocator", "in allocator / c10's", "last iteration in allocator / c10's",
           "first device calls", "steady device calls / iter", "steady host syncs / iter",
           "steady cross-stream reuses / iter", "first reserved/live", "steady reserved/live")


def cell(value, digits=1):
    if value is None:
        return "n/c"  # not countable for this resource
    return f"{value:.{digits}f}"


def mode_of(run):
    mode = run.get("mode", "busy" if run.get("busy") else "idle")
    return f"{mode}, round {run['round']}" if "round" in run else mode


def row(run, c10_steady):
    head = [run["trace"], mode_of(run), run["resource"]]
    if "error" in run or "skipped" in run:
        why = run.get("error") or "skipped: " + run["skipped"]
        return head + [why.replace("|", "/").replace("\n", " ")[:200]] + [""] * (len(COLUMNS) - 4)
    baseline = c10_steady.get((run["trace"], head[1]), {})

    def share(key):
        ours, theirs = run.get(key), baseline.get(key)
        return f"{ours / theirs:.3f}" if ours and theirs else ""

    return head + [
        f"{run['operations'] / run['iterations']:.0f}",
        cell(run["first_ns_per_op"]), cell(run.get("steady_ns_per_op")), share("steady_ns_per_op"),
        cell(run.get("steady_allocator_ns_per_op")), share("steady_allocator_ns_per_op"),
        share("last_allocator_ns_per_op"),
        cell(run["first_device_calls_per_iteration"], 0), cell(run.get("steady_device_calls_per_iteration"), 2),
        cell(run.get("steady_syncs_per_iteration"), 2), cell(run.get("steady_cross_stream_reuses_per_iteration"), 2),
        cell(run["first_reserved_over_live"], 4), cell(run.get("steady_reserved_over_live"), 4),
    ]


def main():
    lines = [json.loads(text) for path in sys.argv[1:] for text in open(path) if text.strip()]
    header = [r for r in lines if r.get("bench") == "replay_bench.sh"]
    runs = [r for r in lines if r.get("bench") == "replay_bench"]
    for h in header:
        print(f"replay_bench.sh at {h['commit']} on {h['gpu']}, PyTorch {h['torch']}, {h['date']}: `{h['command']}`\n")
    if runs and "command" in runs[0]:
        print(f"first run: `{runs[0]['command']}`\n")
    c10_steady = {(r["trace"], mode_of(r)): r for r in runs if r["resource"] == "c10" and "steady_ns_per_op" in r}
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for run in runs:
        print("| " + " | ".join(row(run, c10_steady)) + " |")


if __name__ == "__main__":
    main()
