#!/usr/bin/env python3
"""Medians, ratios and spread of bench/torch/run_csan_compare.sh's output (one argument: the file).

Ours: every repetition of every round, per variant; the ratio of report (off, enforce) to
untracked is the ratio of medians, and its spread is a 95% bootstrap interval (resampling the
repetitions of both variants, 10,000 times, seeded). Paired: each repetition's own ratio of
tracked to untracked blocks run alternately in one process; their median, and a 95% bootstrap
interval of that median. PyTorch's: each run's 10 blocks of 200 steps."""
import json
import random
import statistics
import sys

ours, torch_runs, paired = {}, {"untracked": [], "csan": []}, {}
for line in open(sys.argv[1]):
    if line.startswith("paired "):
        _, name, ratio, tracked, untracked = line.split()
        paired.setdefault(name.split("/")[1], []).append((float(ratio), float(tracked), float(untracked)))
    elif line.startswith("rep "):
        _, name, us = line.split()
        ours.setdefault(name.split("/")[1], []).append(float(us))
    elif line.startswith("{"):
        r = json.loads(line)
        torch_runs["csan" if r["csan"] else "untracked"].extend(r["blocks"])

def interval(num, den, rng):
    ratios = []
    for _ in range(10000):
        a = statistics.median(rng.choices(num, k=len(num)))
        b = statistics.median(rng.choices(den, k=len(den)))
        ratios.append(a / b)
    ratios.sort()
    return ratios[250], ratios[9749]

rng = random.Random(1)
base = ours.get("untracked", [])
if base:
    print(f"| variant | repetitions | median us | min-max us | / untracked (median) | 95% interval |")
    print("|---|---|---|---|---|---|")
    for name in ("untracked", "off", "report", "enforce"):
        xs = ours.get(name, [])
        if not xs:
            continue
        lo, hi = interval(xs, base, rng)
        print(f"| ours {name} | {len(xs)} | {statistics.median(xs):.2f} | {min(xs):.2f}-{max(xs):.2f} | "
              f"{statistics.median(xs) / statistics.median(base):.3f} | {lo:.3f}-{hi:.3f} |")
tu, tc = torch_runs["untracked"], torch_runs["csan"]
if tu and tc:
    lo, hi = interval(tc, tu, rng)
    print(f"| torch untracked | {len(tu)} blocks | {statistics.median(tu):.2f} | {min(tu):.2f}-{max(tu):.2f} | | |")
    print(f"| torch CSAN | {len(tc)} blocks | {statistics.median(tc):.2f} | {min(tc):.2f}-{max(tc):.2f} | "
          f"{statistics.median(tc) / statistics.median(tu):.2f} | {lo:.2f}-{hi:.2f} |")

if paired:
    print()
    print("| paired variant | repetitions | median ratio | min-max ratio | 95% interval of the median | median us tracked / untracked |")
    print("|---|---|---|---|---|---|")
    for name in ("off", "report", "enforce"):
        rows = paired.get(name, [])
        if not rows:
            continue
        ratios = [r for r, _, _ in rows]
        medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(10000))
        print(f"| {name} | {len(rows)} | {statistics.median(ratios):.4f} | {min(ratios):.4f}-{max(ratios):.4f} | "
              f"{medians[250]:.4f}-{medians[9749]:.4f} | "
              f"{statistics.median(t for _, t, _ in rows):.2f} / {statistics.median(u for _, _, u in rows):.2f} |")
