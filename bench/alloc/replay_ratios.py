#!/usr/bin/env python3
"""Host time in the allocator over c10's, per trace, mode and resource of replay_bench.sh's JSON
lines: "steady" is the mean of iterations 2..N, "last" iteration N, each divided by c10's in the
same round (the runs of one round are back to back, so a drift of the machine moves both). With
several rounds (ROUNDS), the median of the rounds' ratios and their range; also device calls and
reserved/live, which do not vary between rounds. Where the lines carry the clock's share of each
figure (`*_timer_ns_per_op`: what two clock reads with nothing between them cost, once per
timed call), "net" gives the same ratios with that share taken out of both sides.

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


def ratio(run, peer, phase, net):
    """run's host time in the allocator per op over peer's, in `phase` (steady or last)."""
    def ns(x):
        figure = x[f"{phase}_allocator_ns_per_op"]
        return figure - x[f"{phase}_timer_ns_per_op"] if net else figure
    return ns(run) / ns(peer)


def main():
    for path in sys.argv[1:]:
        by_round = {}  # (trace, mode, resource) -> {round: run}
        for run in runs_of(path):
            key = (run["trace"].split("/")[-1][:16], "busy" if run["busy"] else "idle", run["resource"])
            by_round.setdefault(key, {})[run.get("round", 1)] = run
        print(path)
        for (trace, mode, resource), rounds in sorted(by_round.items()):
            peer = by_round.get((trace, mode, "c10"), {})
            steady, last, net_steady, net_last = [], [], [], []
            for r, run in rounds.items():
                if r in peer:
                    steady.append(ratio(run, peer[r], "steady", net=False))
                    last.append(ratio(run, peer[r], "last", net=False))
                    if "steady_timer_ns_per_op" in run and "steady_timer_ns_per_op" in peer[r]:
                        net_steady.append(ratio(run, peer[r], "steady", net=True))
                        net_last.append(ratio(run, peer[r], "last", net=True))
            if not steady:
                continue
            run = next(iter(rounds.values()))
            ns = statistics.median(x["steady_allocator_ns_per_op"] for x in rounds.values())
            spread = f" ({min(steady):.3f}-{max(steady):.3f} over {len(steady)} rounds)" if len(steady) > 1 else ""
            print(f"{trace:16} {mode:4} {resource:36} steady {ns:8.1f} /c10 {statistics.median(steady):.3f}{spread}"
                  f" last/c10 {statistics.median(last):.3f} calls1 {run['first_device_calls_per_iteration']}"
                  f" steadycalls {run['steady_device_calls_per_iteration']} syncs {run['steady_syncs_per_iteration']}"
                  f" r/l {run['first_reserved_over_live']}/{run['steady_reserved_over_live']}")
            if net_steady:
                net_spread = f" ({min(net_steady):.3f}-{max(net_steady):.3f})" if len(net_steady) > 1 else ""
                timer = statistics.median(x["steady_timer_ns_per_op"] for x in rounds.values())
                print(f"    net of the clock ({timer:.1f} ns/op): steady /c10 {statistics.median(net_steady):.3f}{net_spread}"
                      f" last/c10 {statistics.median(net_last):.3f}")
            per_round = [x["per_iteration_allocator_ns_per_op"] for x in rounds.values() if "per_iteration_allocator_ns_per_op" in x]
            if per_round:
                medians = [statistics.median(column) for column in zip(*per_round)]
                print("    ns/op in the allocator per iteration, median over the rounds: " + " ".join(f"{m:.0f}" for m in medians))


if __name__ == "__main__":
    main()
