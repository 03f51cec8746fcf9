#!/usr/bin/env python3
"""Host time in the allocator over c10's, per trace, mode and resource of replay_bench.sh's JSON
lines: "steady" is the mean of iterations 2..N, "last" iteration N, each divided by c10's in the
same round (the runs of one round are back to back, so a drift of the machine moves both). With
several rounds (ROUNDS), the median of the rounds' ratios and their range; also device calls and
reserved/live, which do not vary between rounds.

    python3 bench/alloc/replay_ratios.py RUN.jsonl [MORE.jsonl ...]
"""
import json
import statistics
import sys


def runs_of(path):
    for text in open(path):
        try:
            run = json.loads(text)
        except ValueError:
            continue
        if run.get("bench") == "replay_bench" and "steady_allocator_ns_per_op" in run:
            yield run


def main():
    for path in sys.argv[1:]:
        by_round = {}  # (trace, mode, resource) -> {round: run}
        for run in runs_of(path):
            key = (run["trace"].split("/")[-1][:16], "busy" if run["busy"] else "idle", run["resource"])
            by_round.setdefault(key, {})[run.get("round", 1)] = run
        print(path)
        for (trace, mode, resource), rounds in sorted(by_round.items()):
            peer = by_round.get((trace, mode, "c10"), {})
            steady, last = [], []
            for r, run in rounds.items():
                if r in peer:
                    steady.append(run["steady_allocator_ns_per_op"] / peer[r]["steady_allocator_ns_per_op"])
                    last.append(run["last_allocator_ns_per_op"] / peer[r]["last_allocator_ns_per_op"])
            if not steady:
                continue
            run = next(iter(rounds.values()))
            ns = statistics.median(x["steady_allocator_ns_per_op"] for x in rounds.values())
            spread = f" ({min(steady):.3f}-{max(steady):.3f} over {len(steady)} rounds)" if len(steady) > 1 else ""
            print(f"{trace:16} {mode:4} {resource:36} steady {ns:8.1f} /c10 {statistics.median(steady):.3f}{spread}"
                  f" last/c10 {statistics.median(last):.3f} calls1 {run['first_device_calls_per_iteration']}"
                  f" steadycalls {run['steady_device_calls_per_iteration']} syncs {run['steady_syncs_per_iteration']}"
                  f" r/l {run['first_reserved_over_live']}/{run['steady_reserved_over_live']}")
            per_round = [x["per_iteration_allocator_ns_per_op"] for x in rounds.values() if "per_iteration_allocator_ns_per_op" in x]
            if per_round:
                medians = [statistics.median(column) for column in zip(*per_round)]
                print("    ns/op in the allocator per iteration, median over the rounds: " + " ".join(f"{m:.0f}" for m in medians))


if __name__ == "__main__":
    main()
