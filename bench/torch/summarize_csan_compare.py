#!/usr/bin/env python3
"""Medians, ratios and spread of bench/torch/run_csan_compare.sh's output (one argument: the file).

Ours: every repetition of every round, per variant; the ratio of report (off, enforce) to
untracked is the ratio of medians, and its spread is a 95% bootstrap interval (resampling the
repetitions of both variants, 10,000 times, seeded). PyTorch's: each run's 10 blocks of 200 steps."""
import json
import random
import statistics
import sys

ours, torch_runs = {}, {"untracked": [], "csan": []}
for line in open(sys.argv[1]):
    if line.startswith("rep "):
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
base = ours["untracked"]
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
